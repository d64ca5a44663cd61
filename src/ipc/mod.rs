//! The daemon's unix socket and its JSON-lines protocol.

pub mod schema;
