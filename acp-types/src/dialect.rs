//! [`Dialect`]: the protocol dialects acp-rs speaks, for pinning and negotiation.

/// One of the protocol dialects acp-rs speaks. Consumers pin the ones they accept, in
/// preference order, and connections report the one that was negotiated.
///
/// ```
/// use acp_types::Dialect;
///
/// assert_eq!(Dialect::Legacy009.to_string(), "legacy-0.0.9");
/// assert_eq!("threads".parse::<Dialect>(), Ok(Dialect::Threads));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// Stable ACP v1: `initialize` with the integer `protocolVersion: 1`, sessions,
    /// `session/update` notifications.
    V1,
    /// The 0.0.9 dialect (Gemini CLI `--experimental-acp`): `initialize` with the string
    /// `protocolVersion: "0.0.9"`, one implicit conversation, `pushToolCall`.
    Legacy009,
    /// The threads dialect, the first protocol: no handshake, conversation threads, no
    /// `jsonrpc` member.
    Threads,
    /// The probe dialect (the probe code-search agent's `--acp`): `initialize` with the
    /// string `protocolVersion: "1"`, `newSession`/`prompt`, the reply streamed as
    /// `messageChunk` notifications.
    Probe,
    /// The crow dialect (the crow agent and IDE): v1's methods spelled in snake_case
    /// (`protocol_version`, `session_id`), `@type`-tagged updates, `cancel` as a request.
    Crow,
}

impl Dialect {
    /// Every dialect, newest first (the default preference order).
    pub const ALL: [Dialect; 5] = [
        Dialect::V1,
        Dialect::Legacy009,
        Dialect::Threads,
        Dialect::Probe,
        Dialect::Crow,
    ];

    /// The dialect's short name: `v1`, `legacy-0.0.9`, `threads`, `probe` or `crow`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::V1 => "v1",
            Dialect::Legacy009 => "legacy-0.0.9",
            Dialect::Threads => "threads",
            Dialect::Probe => "probe",
            Dialect::Crow => "crow",
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`Dialect`] from an unknown name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl std::fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown dialect `{}` (expected v1, legacy-0.0.9, threads, probe or crow)",
            self.0
        )
    }
}

impl std::error::Error for UnknownDialect {}

impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDialect(s.to_string()))
    }
}
