//! `acp trace`: record an agent's stdio ([`proxy`]) and look at a recording ([`view`],
//! [`html`]). A trace file holds one JSON object per line ([`record`]).

pub mod html;
pub mod proxy;
pub mod record;
pub mod view;
