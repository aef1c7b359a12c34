//! A batch line, handed on element by element in array order (see [`crate::batch`]).

use super::Reader;
use crate::dispatch::batch::{Batch, is_batch, split};
use crate::error::Error;

impl Reader {
    /// A batch line (see the module docs). With batches off it goes the ordinary way, which
    /// refuses it.
    pub(super) async fn on_batch(&mut self, line: &str, max: usize) {
        let elements = match split(line, max) {
            Ok(elements) => elements,
            Err(error) => {
                tracing::warn!(%error, "batch refused");
                return self.reply(None, Err(error)).await;
            }
        };
        let batch = Batch::new(self.shared.clone());
        self.batch = Some(batch.clone());
        for element in elements {
            let text = element.get();
            if is_batch(text) {
                let error = Error::invalid_request("a batch element must be one message");
                self.reply(None, Err(error)).await;
            } else {
                self.on_parsed_line(text, None).await;
            }
        }
        self.batch = None;
        batch.seal().await;
    }
}
