//! Tests of the log client.
