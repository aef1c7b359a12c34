//! The index of [`super::JsonlStore`]: `index.jsonl`'s records, replayed at open into the
//! in-memory listing, and the encoding of a record as one line.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::path::Path;

use acp_types::v1::SessionId;
use serde::{Deserialize, Serialize};

use super::files::{cut_torn_tail, read_lines};
use crate::{SessionSummary, StoreError, StoredEvent};

#[derive(Default)]
pub(super) struct Index {
    pub(super) file: Option<File>,
    pub(super) rows: HashMap<SessionId, (u64, SessionSummary)>,
    pub(super) order: BTreeMap<u64, SessionId>,
    pub(super) next: u64,
    /// Lines in `index.jsonl` (to know when to compact).
    pub(super) lines: usize,
}

/// One line of `index.jsonl`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum IndexRecord {
    /// A session's listing row (creation or change; the last one wins).
    Put { seq: u64, row: SessionSummary },
    /// A deleted session.
    Delete(SessionId),
}

pub(super) fn read_index(dir: &Path) -> Result<Index, StoreError> {
    let path = dir.join("index.jsonl");
    let mut index = Index::default();
    let mut lineno = 0usize;
    read_lines(&path, 0, |line, offset| {
        lineno += 1;
        match serde_json::from_slice::<IndexRecord>(line) {
            Ok(IndexRecord::Put { seq, row }) => {
                if let Some((old, _)) = index.rows.get(&row.session_id) {
                    index.order.remove(old);
                }
                index.order.insert(seq, row.session_id.clone());
                index.rows.insert(row.session_id.clone(), (seq, row));
                index.next = index.next.max(seq);
            }
            Ok(IndexRecord::Delete(id)) => {
                if let Some((seq, _)) = index.rows.remove(&id) {
                    index.order.remove(&seq);
                }
            }
            Err(e) => tracing::warn!(
                file = %path.display(),
                line = lineno,
                offset,
                error = %e,
                "skipping a corrupt index record"
            ),
        }
        true
    })?;
    index.lines = lineno;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(&path)
        .map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))?;
    cut_torn_tail(&mut file, &path)
        .map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))?;
    index.file = Some(file);
    Ok(index)
}

/// Events as the lines of one append.
pub(super) fn encode_events(events: &[StoredEvent]) -> Result<Vec<u8>, StoreError> {
    let mut buf = Vec::with_capacity(256 * events.len());
    for event in events {
        to_line(event, &mut buf)?;
    }
    Ok(buf)
}

pub(super) fn to_line<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), StoreError> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| StoreError::Other(format!("cannot encode a record: {e}")))?;
    out.push(b'\n');
    Ok(())
}
