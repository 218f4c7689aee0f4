//! The request path as a tower [`Service`]: `BrokerConnection: Service<R>` for every
//! [`WireRequest`] `R`, so timeouts, retries, rate limits and tracing are layers.
//!
//! # Examples
//! ```no_run
//! # async fn example(connection: kroupier_coordinator::connection::BrokerConnection) {
//! use std::time::Duration;
//! use kafka_protocol::messages::ListGroupsRequest;
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! let service = ServiceBuilder::new()
//!     .timeout(Duration::from_secs(5))
//!     .service(connection);
//! let groups = service.oneshot(ListGroupsRequest::default()).await;
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower::Service;

use super::broker::BrokerConnection;
use super::error::ConnectionError;
use crate::wire::WireRequest;

/// The future of [`BrokerConnection`]'s `Service::call`.
pub type ResponseFuture<T> = Pin<Box<dyn Future<Output = Result<T, ConnectionError>> + Send>>;

impl<R: WireRequest> Service<R> for BrokerConnection {
    type Response = R::Response;
    type Error = ConnectionError;
    type Future = ResponseFuture<R::Response>;

    /// Ready while the connection is open; a closed connection is an error (connect again).
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.is_closed() {
            Poll::Ready(Err(ConnectionError::Closed {
                addr: self.addr().to_owned(),
                reason: "the connection is closed".to_owned(),
            }))
        } else {
            Poll::Ready(Ok(()))
        }
    }

    /// Sends the request at the negotiated version, with the connection's request timeout.
    fn call(&mut self, request: R) -> Self::Future {
        let connection = self.clone();
        Box::pin(async move { connection.send(&request).await })
    }
}
