//! The shared `SessionStore` conformance suite (acp-agent's `store::conformance`) against
//! `PostgresStore` on a real server (see `support`), a fresh database per case.

mod support;

/// A store on a fresh database, or `None` (skipped, loudly) without a server.
async fn fresh() -> Option<acp_store_postgres::PostgresStore> {
    let server = support::shared()?;
    let url = server.fresh_db();
    Some(
        acp_store_postgres::PostgresStore::open(&url)
            .await
            .expect("the store opens"),
    )
}

/// Runs a case on a fresh store (nothing without a server).
macro_rules! pg_cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let Some(store) = fresh().await {
                    acp_agent::store::conformance::$case(store).await;
                }
            }
        )*
    };
}

pg_cases!(
    create_and_meta,
    unknown_sessions,
    append_and_replay_by_pages,
    resume_answers_the_metadata_again,
    list_pages_and_cwd_filter,
    close_keeps_the_data,
    delete_removes_only_that_session,
    fork_copies_the_history,
    turn_markers_round_trip,
    concurrent_appends_never_interleave,
    hostile_ids_are_plain_data,
    owners_are_kept_and_listings_never_mix_them,
);

/// Every case of the suite runs here (a case added to the suite must be added above).
#[test]
fn every_conformance_case_runs() {
    let here = include_str!("conformance.rs");
    for case in acp_agent::store::conformance::CASES {
        assert!(
            here.contains(&format!("    {case},")),
            "{case} is not run against PostgreSQL"
        );
    }
}
