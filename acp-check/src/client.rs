//! The kit's client: what it answers when the agent asks for files, permission or a
//! terminal. It serves only what [`Offer`] advertises (the rest is `-32601`; whether the
//! agent asked at all is `capabilities.offered_only`'s business, read from the wire), and
//! it answers permission requests the way a careful editor's user would: allow this one
//! action (`allow_once`, never an "always" option: an agent that offers no one-time allow is
//! refused, by `acp_client::permission`'s rule), or `cancelled` once the turn is being
//! cancelled.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_client::fs::SandboxedFs;
use acp_client::permission::{PermissionPolicy, choose_permission};
use acp_client::terminal::{TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Error, async_trait};
use acp_types::v1::*;
use tokio::sync::watch;

use crate::options::Offer;

/// How many `session/update`s a v2 client keeps for the checks (later ones are counted out,
/// as the wire log bounds its lines).
const MAX_UPDATES: usize = 100_000;

/// The client every connection of a run serves.
pub(crate) struct CheckClient {
    offer: Offer,
    fs: SandboxedFs,
    terminals: Terminals,
    /// How permission requests are answered now (the cancellation checks hold them across
    /// their `session/cancel`).
    permissions: watch::Sender<Permissions>,
    /// How many permission requests were answered `cancelled`.
    cancelled: AtomicUsize,
}

/// How the kit answers `session/request_permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Permissions {
    /// Allow the one action (`allow_once`), as a user who trusts the agent would; refuse
    /// when the agent offers no one-time allow.
    Allow,
    /// Wait (a turn is about to be cancelled).
    Hold,
    /// Answer `cancelled`, as a client must once it has cancelled the turn.
    Cancelled,
}

impl CheckClient {
    pub fn new(offer: Offer, workspace: PathBuf) -> std::io::Result<CheckClient> {
        Ok(CheckClient {
            offer,
            fs: SandboxedFs::new([&workspace])?,
            terminals: Terminals::new().with_workspace(workspace),
            permissions: watch::channel(Permissions::Allow).0,
            cancelled: AtomicUsize::new(0),
        })
    }

    /// How many permission requests have been answered `cancelled` so far.
    pub fn cancelled_permissions(&self) -> usize {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Sets how permission requests are answered from now on; waiting ones follow.
    pub fn permissions(&self, how: Permissions) {
        self.permissions.send_replace(how);
    }
}

fn not_offered(method: &str) -> Error {
    Error::method_not_found(method).with_data(serde_json::Value::String(format!(
        "acp check did not offer {method}"
    )))
}

#[async_trait]
impl Client for CheckClient {
    async fn request_permission(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let mut how = self.permissions.subscribe();
        let now = match how.wait_for(|p| *p != Permissions::Hold).await {
            Ok(p) => *p,
            Err(_) => Permissions::Cancelled,
        };
        if now == Permissions::Cancelled {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
            return Ok(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled,
            ));
        }
        let choice = choose_permission(&params.options, PermissionPolicy::AllowOnce);
        Ok(RequestPermissionResponse::new(
            choice.outcome(&params.options),
        ))
    }

    async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        if !self.offer.read {
            return Err(not_offered(names::FS_READ_TEXT_FILE));
        }
        self.fs.read_text_file(params).await
    }

    async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        if !self.offer.write {
            return Err(not_offered(names::FS_WRITE_TEXT_FILE));
        }
        self.fs.write_text_file(params).await
    }

    async fn approve_terminal(&self, _request: &TerminalRequest) -> TerminalDecision {
        if self.offer.terminal {
            TerminalDecision::Allow
        } else {
            TerminalDecision::deny("acp check did not offer terminals")
        }
    }

    /// The terminal methods, served by the trait's defaults only when `--offer` offered
    /// terminals (otherwise `-32601`, as for any method a client does not serve).
    fn terminals(&self) -> Option<&Terminals> {
        self.offer.terminal.then_some(&self.terminals)
    }
}

/// The kit's client on a v2 connection: permission requests are answered by the v1
/// client's policy (allow once, hold, `cancelled`: [`CheckClient::permissions`] sets it for
/// both), elicitations are declined (the kit offers no elicitation), and every
/// `session/update` is kept whole, in arrival order, for the v2 checks to read.
pub(crate) struct CheckClientV2 {
    policy: std::sync::Arc<CheckClient>,
    updates: std::sync::Mutex<Vec<Update>>,
    /// Told when an update joins `updates`.
    arrived: tokio::sync::Notify,
}

/// One `session/update` as the v2 client received it: its session, its update as JSON (as
/// the types keep it: unknown values byte for byte) and typed (for the client's reducer).
#[derive(Clone, Debug)]
pub(crate) struct Update {
    pub session: String,
    pub json: serde_json::Value,
    pub typed: acp_types::v2::SessionUpdate,
}

impl Update {
    /// The update's `sessionUpdate` kind.
    pub fn kind(&self) -> &str {
        self.json
            .get("sessionUpdate")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    }
    /// A string field of the update.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.json.get(name).and_then(serde_json::Value::as_str)
    }
    /// The update, short, for evidence.
    pub fn evidence(&self) -> String {
        crate::text::cut(&self.json.to_string(), 200)
    }
}

impl CheckClientV2 {
    pub fn new(policy: std::sync::Arc<CheckClient>) -> CheckClientV2 {
        CheckClientV2 {
            policy,
            updates: std::sync::Mutex::default(),
            arrived: tokio::sync::Notify::new(),
        }
    }

    /// How many updates have arrived (a mark for [`CheckClientV2::since`]).
    pub fn mark(&self) -> usize {
        acp_rpc::sync::lock(&self.updates).len()
    }

    /// The updates that arrived from `mark` on.
    pub fn since(&self, mark: usize) -> Vec<Update> {
        let updates = acp_rpc::sync::lock(&self.updates);
        updates.get(mark..).unwrap_or_default().to_vec()
    }

    /// Waits (at most `bound`) until an update from `mark` on satisfies `done`, and returns
    /// the updates from `mark` on either way.
    pub async fn wait_for(
        &self,
        mark: usize,
        bound: std::time::Duration,
        done: impl Fn(&Update) -> bool,
    ) -> (bool, Vec<Update>) {
        let until = tokio::time::Instant::now() + bound;
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let seen = self.since(mark);
            if seen.iter().any(&done) {
                return (true, seen);
            }
            if tokio::time::timeout_at(until, arrived).await.is_err() {
                return (false, self.since(mark));
            }
        }
    }
}

/// The v2 engine's handler: the run's [`CheckClientV2`], shared with the checks that read
/// what it kept.
pub(crate) struct V2Handler(pub std::sync::Arc<CheckClientV2>);

#[async_trait]
impl acp_client::v2::Client for V2Handler {
    async fn session_request_permission(
        &self,
        params: acp_types::v2::RequestPermissionRequest,
    ) -> Result<acp_types::v2::RequestPermissionResponse, Error> {
        use acp_types::v2::{
            CancelledPermissionOutcome, PermissionOptionKind, RequestPermissionOutcome,
            RequestPermissionResponse, SelectedPermissionOutcome,
        };
        let mut how = self.0.policy.permissions.subscribe();
        let now = match how.wait_for(|p| *p != Permissions::Hold).await {
            Ok(p) => *p,
            Err(_) => Permissions::Cancelled,
        };
        let once = params
            .options
            .iter()
            .find(|o| o.kind == PermissionOptionKind::AllowOnce);
        let outcome = match (now, once) {
            (Permissions::Allow, Some(option)) => RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new(option.option_id.clone()),
            ),
            // As v1's policy: no one-time allow offered is a refusal, never an "always".
            _ => {
                if now == Permissions::Cancelled {
                    self.0.policy.cancelled.fetch_add(1, Ordering::Relaxed);
                }
                RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new())
            }
        };
        Ok(RequestPermissionResponse::new(outcome))
    }

    async fn elicitation_create(
        &self,
        _params: acp_types::v2::CreateElicitationRequest,
    ) -> Result<acp_types::v2::CreateElicitationResponse, Error> {
        Ok(acp_types::v2::CreateElicitationResponse::new(
            acp_types::v2::ElicitationAction::Decline,
        ))
    }

    async fn session_update(
        &self,
        params: acp_types::v2::UpdateSessionNotification,
    ) -> Result<(), Error> {
        let json = serde_json::to_value(&params.update).unwrap_or_default();
        let mut updates = acp_rpc::sync::lock(&self.0.updates);
        // Bounded like the wire log: an agent that floods cannot grow the kit without end.
        if updates.len() < MAX_UPDATES {
            updates.push(Update {
                session: params.session_id.to_string(),
                json,
                typed: params.update,
            });
        }
        drop(updates);
        self.0.arrived.notify_waiters();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(kinds: &[(&str, PermissionOptionKind)]) -> RequestPermissionRequest {
        let options = kinds
            .iter()
            .map(|(id, kind)| PermissionOption::new(*id, *id, kind.clone()))
            .collect::<Vec<_>>();
        RequestPermissionRequest::new("s1", ToolCallUpdate::new("t1"), options)
    }

    async fn answer(client: &CheckClient, kinds: &[(&str, PermissionOptionKind)]) -> String {
        let response = client.request_permission(ask(kinds)).await.unwrap();
        serde_json::to_value(&response.outcome).unwrap().to_string()
    }

    /// Issue 32: the kit took `allow_always` when the agent offered no `allow_once`, and the
    /// first option of any kind when it offered neither. It grants only once, whatever the
    /// options' order (Qwen lists "always" first), and refuses an agent that offers only
    /// "always" grants.
    #[tokio::test]
    async fn permission_requests_are_allowed_once_never_always() {
        use PermissionOptionKind as K;
        let dir = std::env::temp_dir();
        let client = CheckClient::new(Offer::default(), dir).unwrap();
        let qwen = [
            ("always", K::AllowAlways),
            ("once", K::AllowOnce),
            ("reject", K::RejectOnce),
        ];
        assert!(answer(&client, &qwen).await.contains("\"once\""));
        let always_only = [("always", K::AllowAlways), ("never", K::RejectAlways)];
        assert!(answer(&client, &always_only).await.contains("\"never\""));
        let nothing_fits = [("always", K::AllowAlways)];
        assert!(answer(&client, &nothing_fits).await.contains("cancelled"));
        client.permissions(Permissions::Cancelled);
        assert!(answer(&client, &qwen).await.contains("cancelled"));
    }
}
