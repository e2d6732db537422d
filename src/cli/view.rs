//! `gridarena view`: the interactive viewer window (its arguments and logic live in the library's
//! `viewer` module; the binary only starts it).

use anyhow::Result;

pub(crate) use gridarena::viewer::ViewArgs;

/// Opens the viewer window and returns when it is closed.
pub(crate) fn run(args: ViewArgs) -> Result<()> {
    gridarena::viewer::run(args).map_err(anyhow::Error::from)
}
