//! The named tensors a checkpoint holds beside the parameters and Adam (the replay, the
//! opponent models' parameters and Adam): typed arrays written into the checkpoint's
//! safetensors file, and the checked copy of a saved prefix back into a live buffer.

use crate::error::BadField;

/// One named array of a checkpoint's safetensors file.
#[derive(Debug, Clone, PartialEq)]
pub enum Tensor {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// Bytes.
    U8(Vec<u8>),
    /// 32-bit unsigned integers.
    U32(Vec<u32>),
}

/// A checkpoint's extra tensors, by name.
pub type NamedTensors = Vec<(String, Tensor)>;

impl Tensor {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Tensor::F32(v) => v.len(),
            Tensor::U8(v) => v.len(),
            Tensor::U32(v) => v.len(),
        }
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The little-endian bytes (as safetensors stores them).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Tensor::F32(v) => bytemuck::cast_slice(v),
            Tensor::U8(v) => v,
            Tensor::U32(v) => bytemuck::cast_slice(v),
        }
    }
}

/// The tensor called `name`, if the checkpoint has it.
pub(crate) fn find<'a>(tensors: &'a [(String, Tensor)], name: &str) -> Option<&'a Tensor> {
    tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
}

/// The f32 tensor called `name` of exactly `len` elements.
pub(crate) fn f32s<'a>(
    tensors: &'a [(String, Tensor)],
    name: &str,
    len: usize,
) -> Result<&'a [f32], BadField> {
    match find(tensors, name) {
        Some(Tensor::F32(v)) => BadField::check_len(name, len, v.len()).map(|()| v.as_slice()),
        Some(_) => Err(BadField::range(name, "an F32 tensor", "another dtype")),
        None => Err(BadField::range(name, format!("{len} values"), "no tensor")),
    }
}

/// A live column of a buffer (a replay's), to save a prefix of or restore one into.
pub(crate) enum Column<'a> {
    /// Bytes (observations).
    U8(&'a mut [u8]),
    /// Integers (actions, networks, slots), each below the bound.
    U32(&'a mut [u32], u32),
    /// Floats (rewards, dones).
    F32(&'a mut [f32]),
}

impl Column<'_> {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Column::U8(v) => v.len(),
            Column::U32(v, _) => v.len(),
            Column::F32(v) => v.len(),
        }
    }

    /// A copy of the first `n` elements.
    pub fn prefix(&self, n: usize) -> Tensor {
        match self {
            Column::U8(v) => Tensor::U8(v[..n].to_vec()),
            Column::U32(v, _) => Tensor::U32(v[..n].to_vec()),
            Column::F32(v) => Tensor::F32(v[..n].to_vec()),
        }
    }

    /// Copies `t` over the first `n` elements: the dtype must match, `t` must hold exactly `n`
    /// elements and integers must be below the column's bound (`name` is the field reported
    /// otherwise).
    pub fn restore(&mut self, t: &Tensor, n: usize, name: &str) -> Result<(), BadField> {
        BadField::check_len(name, n, t.len())?;
        BadField::check_len(name, n.min(self.len()), t.len())?;
        match (self, t) {
            (Column::U8(c), Tensor::U8(v)) => c[..n].copy_from_slice(v),
            (Column::U32(c, bound), Tensor::U32(v)) => {
                if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| **x >= *bound) {
                    let field = format!("{name}[{i}]");
                    return Err(BadField::range(&field, format!("a value below {bound}"), x));
                }
                c[..n].copy_from_slice(v)
            }
            (Column::F32(c), Tensor::F32(v)) => c[..n].copy_from_slice(v),
            _ => return Err(BadField::range(name, "the column's dtype", "another dtype")),
        }
        Ok(())
    }
}
