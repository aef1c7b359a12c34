//! What the `otel` feature's tests share: an exporter that keeps every finished span, and
//! the lookups they make in them.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Keeps every finished span.
#[derive(Clone, Debug, Default)]
pub struct Spans(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Spans {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Spans {
    /// Every span kept so far.
    pub fn all(&self) -> Vec<SpanData> {
        self.0.lock().unwrap().clone()
    }

    /// The spans named `name`.
    pub fn named(&self, name: &str) -> Vec<SpanData> {
        let spans = self.0.lock().unwrap();
        spans.iter().filter(|s| s.name == name).cloned().collect()
    }

    /// The one span named `name` whose `method` is `method` (fails unless exactly one).
    pub fn one(&self, name: &str, method: &str) -> SpanData {
        let found: Vec<_> = self
            .named(name)
            .into_iter()
            .filter(|s| attr(s, "method") == method)
            .collect();
        assert_eq!(found.len(), 1, "{name} {method}: {found:#?}");
        found.into_iter().next().unwrap()
    }
}

/// A span's attribute as text (empty when it has none of that name).
pub fn attr(span: &SpanData, key: &str) -> String {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
        .unwrap_or_default()
}
