//! `acp sessions`: the agent's sessions, every page, one line each.

use std::io::Write;
use std::sync::Arc;

use acp_types::v1::*;

use crate::client::CliClient;
use crate::proto;
use crate::view::{Screen, View};

use crate::chat::EXIT_FAILED;
use crate::link::{AgentSpec, connect};

/// `acp sessions`: lists the agent's sessions (every page); returns the exit status.
pub async fn sessions(spec: AgentSpec) -> i32 {
    let view: Arc<dyn View> = Arc::new(Screen::stdout());
    // Listing asks nothing of the user: a question the agent sends is refused.
    let client = match CliClient::new(None, &spec.cwd) {
        Ok(client) => client,
        Err(e) => {
            view.error(&e);
            return EXIT_FAILED;
        }
    };
    let link = match connect(&spec, client).await {
        Ok(link) => link,
        Err(e) => {
            view.error(e.lines().next().unwrap_or("failed"));
            return EXIT_FAILED;
        }
    };
    if link
        .init
        .agent_capabilities
        .session_capabilities
        .list
        .is_none()
    {
        view.error("the agent does not list its sessions (no sessionCapabilities.list)");
        link.shutdown().await;
        return EXIT_FAILED;
    }
    let mut cursor = None;
    let mut count = 0usize;
    // A bound on pages: an agent that hands out cursors forever must not keep us here.
    for _ in 0..1000 {
        match link
            .agent()
            .list_sessions(proto::list_sessions_request(cursor.take()))
            .await
        {
            Ok(page) => {
                for s in &page.sessions {
                    count += 1;
                    // A closed stdout (`| head`) ends the listing, not the program.
                    if writeln!(std::io::stdout(), "{}", session_line(s)).is_err() {
                        link.shutdown().await;
                        return 0;
                    }
                }
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            Err(e) => {
                view.error(&format!("session/list failed: {}", e.message));
                link.shutdown().await;
                return EXIT_FAILED;
            }
        }
    }
    if count == 0 {
        view.info("no sessions");
    }
    link.shutdown().await;
    0
}

/// One session as a line: id, working directory, title, last update.
fn session_line(s: &SessionInfo) -> String {
    let safe = |t: &str| crate::sanitize::terminal_safe(t).replace(['\n', '\t'], " ");
    format!(
        "{}\t{}\t{}\t{}",
        safe(&s.session_id.0),
        safe(&s.cwd),
        s.title.as_deref().map(safe).unwrap_or_default(),
        s.updated_at.as_deref().map(safe).unwrap_or_default()
    )
}
