//! The [`Client`] trait: what an application implements to be an ACP client, one method
//! per v1 method an agent calls. It is generated from the method table
//! (`client/generated.rs`); the connection's handling around it (ordering, prompt streams)
//! is in the dispatcher (`dispatch.rs`).

#[rustfmt::skip]
mod generated;

pub use generated::Client;

/// Every client decides on its terminals through [`Client::approve_terminal`].
#[cfg(feature = "process")]
#[async_trait::async_trait]
impl<C: Client + ?Sized> crate::terminal::ApproveTerminal for C {
    async fn approve(
        &self,
        request: &crate::terminal::TerminalRequest,
    ) -> crate::terminal::TerminalDecision {
        self.approve_terminal(request).await
    }
}
