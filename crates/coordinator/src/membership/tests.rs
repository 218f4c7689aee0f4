//! Tests of the membership state machine on virtual time.
