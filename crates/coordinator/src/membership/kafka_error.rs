//! The error code a Kafka response carried, as kroupier reports it.
//!
//! kroupier decodes responses with the kafka-protocol crate, whose `ResponseError` names every
//! code; that type stays inside: a kafka-protocol upgrade must not change kroupier's API. What a
//! user reads is the code's number and Kafka's name for it (`UNKNOWN_MEMBER_ID`), in the message.

use std::fmt;

use kafka_protocol::error::ResponseError;

/// An error code from a Kafka response (e.g. `ILLEGAL_GENERATION`, 22): why the coordinator
/// reset this member's generation, or an error kroupier did not expect. Its `Display` is the
/// message Kafka's clients print for the code.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KafkaError(ResponseError);

impl KafkaError {
    /// The error code, as in Kafka's protocol (`org.apache.kafka.common.protocol.Errors`).
    pub fn code(&self) -> i16 {
        self.0.code()
    }
}

impl From<ResponseError> for KafkaError {
    fn from(error: ResponseError) -> Self {
        KafkaError(error)
    }
}

impl PartialEq<ResponseError> for KafkaError {
    fn eq(&self, other: &ResponseError) -> bool {
        self.0 == *other
    }
}

impl fmt::Debug for KafkaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for KafkaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kafka_error_keeps_the_code_and_the_words_of_the_response() {
        let error = KafkaError::from(ResponseError::IllegalGeneration);
        assert_eq!(error.code(), 22);
        assert_eq!(error, ResponseError::IllegalGeneration);
        assert_eq!(
            error.to_string(),
            ResponseError::IllegalGeneration.to_string()
        );
        assert_eq!(format!("{error:?}"), "IllegalGeneration");
    }
}
