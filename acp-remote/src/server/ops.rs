//! The operators' endpoints: `GET /readyz` (can this server take a connection now) and
//! `GET /metrics` (the Prometheus exposition), beside `GET /healthz` (alive).
//!
//! `/healthz` and `/readyz` need no credential (a load balancer probes them) and say nothing
//! but `ok`/`ready` or `not ready`; why a check failed goes to the log only. `/metrics` is
//! behind the same rule as `/acp`: the credential when one is configured (traffic volumes are
//! not for everyone), none on a loopback-only server without one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

use super::{Body, Shared, text};

/// How long a readiness check may take before it counts as failed.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// A condition `/readyz` checks besides the connection limit (a session store being
/// reachable, say). `Err` says why not, for the server's log only.
pub trait ReadinessCheck: Send + Sync + 'static {
    /// Whether the server can serve now. Runs on every probe, so keep it cheap (a
    /// `SELECT 1`, a stat of a directory); it gets two seconds before counting as failed.
    fn check(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

impl<F, Fut> ReadinessCheck for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    fn check(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(self())
    }
}

/// `GET /readyz`: 200 when under the connection limit and every check passes, else 503.
pub(crate) async fn readyz(shared: &Shared) -> Response<Body> {
    if shared.reserved.load(Ordering::SeqCst) >= shared.limits.max_connections {
        tracing::debug!("not ready: at the connection limit");
        return text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n");
    }
    for check in &shared.readiness {
        let verdict = tokio::time::timeout(CHECK_TIMEOUT, check.check()).await;
        let why = match verdict {
            Ok(Ok(())) => continue,
            Ok(Err(why)) => why,
            Err(_) => format!("a readiness check took more than {CHECK_TIMEOUT:?}"),
        };
        tracing::warn!(%why, "not ready");
        return text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n");
    }
    text(StatusCode::OK, "ready\n")
}

/// `GET /metrics` (after the credential check): the exposition, OpenMetrics when `accept`
/// asks for it (Prometheus does), else the Prometheus text format; 404 when metrics are off.
pub(crate) fn metrics(shared: &Shared, accept: Option<&str>) -> Response<Body> {
    let Some(metrics) = &shared.metrics else {
        return text(StatusCode::NOT_FOUND, "not found\n");
    };
    let open = accept.is_some_and(|a| a.contains("application/openmetrics-text"));
    let (body, content_type) = if open {
        (metrics.encode(), crate::metrics::CONTENT_TYPE)
    } else {
        (metrics.encode_text(), crate::metrics::TEXT_CONTENT_TYPE)
    };
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The shared form the server keeps its checks in.
pub(crate) type Checks = Vec<Arc<dyn ReadinessCheck>>;
