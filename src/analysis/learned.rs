//! Learned best responses (filled in below).
