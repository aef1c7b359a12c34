//! Pieces the legacy modules of this crate share.

pub(crate) use acp_rpc::memory::{pipe, tie};
