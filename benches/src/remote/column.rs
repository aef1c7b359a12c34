//! The columns of `acp-bench remote`: whose client and server, over which profile.

/// Whose client and server, over which profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Column {
    OursStdio,
    OursWs,
    OursHttp,
    OfficialWs,
    OfficialHttp,
    /// Our client against the TypeScript SDK's experimental server (`AcpServer` behind
    /// Node's http server, interop/peers/ts/server.mjs) in front of the TypeScript bench agent.
    TsWs,
    TsHttp,
}

impl Column {
    pub(super) const ALL: [Column; 7] = [
        Column::OursStdio,
        Column::OursWs,
        Column::OursHttp,
        Column::OfficialWs,
        Column::OfficialHttp,
        Column::TsWs,
        Column::TsHttp,
    ];

    pub(super) fn title(self) -> &'static str {
        match self {
            Column::OursStdio => "ours stdio",
            Column::OursWs => "ours ws",
            Column::OursHttp => "ours http",
            Column::OfficialWs => "official ws",
            Column::OfficialHttp => "official http",
            Column::TsWs => "ts server ws",
            Column::TsHttp => "ts server http",
        }
    }

    pub(super) fn server(self) -> Option<&'static str> {
        match self {
            Column::OursStdio => None,
            Column::OursWs | Column::OursHttp => Some("ours"),
            Column::OfficialWs | Column::OfficialHttp => Some("official"),
            Column::TsWs | Column::TsHttp => Some("ts"),
        }
    }

    /// The column `--only` names `name`.
    pub(super) fn named(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.short_name() == name)
    }

    pub(super) fn short_name(self) -> &'static str {
        match self {
            Column::OursStdio => "ours-stdio",
            Column::OursWs => "ours-ws",
            Column::OursHttp => "ours-http",
            Column::OfficialWs => "official-ws",
            Column::OfficialHttp => "official-http",
            Column::TsWs => "ts-ws",
            Column::TsHttp => "ts-http",
        }
    }

    pub(super) fn websocket(self) -> bool {
        matches!(self, Column::OursWs | Column::OfficialWs | Column::TsWs)
    }
}
