//! The server's [`Metrics`] as the meter of a [`MeteredStore`] (acp-store's wrapper): wrap
//! the store a server's agents share and `/metrics` shows
//! `acp_store_operations_total{operation,outcome}` and
//! `acp_store_operation_duration_seconds{operation}`.

use acp_store::StoreMeter;

#[cfg(doc)]
use acp_store::MeteredStore;

use crate::metrics::Metrics;

impl StoreMeter for Metrics {
    fn store_operation(
        &self,
        operation: &'static str,
        outcome: &'static str,
        took: std::time::Duration,
    ) {
        Metrics::store_operation(self, operation, outcome, took);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use acp_agent::store::{MemoryStore, SessionStore};
    use acp_agent::types::SessionId;
    use acp_store::MeteredStore;

    use crate::metrics::Metrics;

    #[tokio::test]
    async fn operations_are_counted_by_outcome() {
        let metrics = Metrics::new();
        let store = MeteredStore::new(Arc::new(MemoryStore::default()), metrics.clone());
        let missing = SessionId("nope".to_owned());
        assert!(store.meta(&missing).await.unwrap().is_none());
        assert!(store.delete(&missing).await.is_err());
        let text = metrics.encode_text();
        let line = |series: &str| text.lines().any(|l| l.starts_with(series));
        assert!(
            line("acp_store_operations_total{operation=\"meta\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            line("acp_store_operations_total{operation=\"delete\",outcome=\"not_found\"} 1"),
            "{text}"
        );
        assert!(
            line("acp_store_operation_duration_seconds_count{operation=\"meta\"} 1"),
            "{text}"
        );
    }
}
