//! One request, from the moment its envelope is read to its response: how
//! it ended, typed ([`Answer`]: a result, input required, a task created, an
//! error) until it is rendered once into its JSON-RPC response, and the
//! bookkeeping of its lifetime ([`Served`]: its metric and its span), and
//! the sealed `requestState` a multi round-trip request carries from one
//! round to the next ([`Sealer`]).
//!
//! The answer's [`AnswerKind`] travels with the response, so a transport
//! decides what it needs (the HTTP status of a 2026-07-28 answer, the end
//! of a request's stream) from it, never by reading the response back.

mod answer;
mod sealed_state;
mod served;

pub use answer::{Answer, AnswerKind, Reply};
pub use sealed_state::Sealer;
pub use served::Served;
