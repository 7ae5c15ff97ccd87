//! Transports: they only move messages between a client and a session.

pub mod http;
pub mod stdio;
