//! How the driver reaches Kafka: FindCoordinator to any broker, group requests to the
//! coordinator over two connections of the member's own.
//!
//! A Kafka broker reads one request per connection at a time, and holds a JoinGroup (and a
//! follower's SyncGroup) until the rebalance completes. A heartbeat queued behind it on the
//! same connection would wait that long, time out, and close the connection — voiding the
//! join. So JoinGroup and SyncGroup go over a *join* connection and Heartbeat and LeaveGroup
//! over a *control* connection: heartbeats are never blocked by the rebalance itself.
//!
//! When the membership forgets the coordinator, both connections are closed (as Kafka's
//! `markCoordinatorUnknown` disconnects), so a parked JoinGroup cannot delay the next one.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use crate::connection::Detail;
use crate::connection::{BrokerConnection, BrokerNode, Cluster, ClusterConfig, ConnectionError};
use crate::membership::{Coordinator, Request, Response};

/// The future of one request: its response or why none came.
pub(crate) type SendFuture =
    Pin<Box<dyn Future<Output = Result<Response, ConnectionError>> + Send>>;

/// What the driver needs of the network. The Kafka implementation is [`KafkaTransport`];
/// tests plug in a model coordinator.
pub(crate) trait Transport: Send + Sync + 'static {
    /// Sends `request` (FindCoordinator to any broker, the rest to the coordinator) and waits
    /// at most `timeout` for its response.
    fn send(self: Arc<Self>, request: Request, timeout: Duration) -> SendFuture;

    /// The coordinator is now `coordinator`, or unknown (`None`): drop its connections.
    fn set_coordinator(&self, coordinator: Option<&Coordinator>);
}

#[derive(Debug, Clone, Copy)]
enum Link {
    /// JoinGroup and SyncGroup, which the broker parks during a rebalance.
    Join,
    /// Heartbeat and LeaveGroup, which it answers at once.
    Control,
}

#[derive(Debug, Default)]
struct Links {
    /// Grows at every coordinator change; a connection made for an older one is discarded.
    epoch: u64,
    node: Option<BrokerNode>,
    join: Option<BrokerConnection>,
    control: Option<BrokerConnection>,
}

impl Links {
    fn slot(&mut self, link: Link) -> &mut Option<BrokerConnection> {
        match link {
            Link::Join => &mut self.join,
            Link::Control => &mut self.control,
        }
    }
}

/// The transport over Kafka: a [`Cluster`] for "any broker" and two coordinator connections.
#[derive(Debug)]
pub(crate) struct KafkaTransport {
    cluster: Cluster,
    links: Mutex<Links>,
}

impl KafkaTransport {
    pub(crate) fn new(config: ClusterConfig) -> Result<Self, ConnectionError> {
        Ok(Self {
            cluster: Cluster::new(config)?,
            links: Mutex::default(),
        })
    }

    fn links(&self) -> MutexGuard<'_, Links> {
        // Every update leaves the links consistent, so a poisoned lock is still usable.
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn connection(&self, link: Link) -> Result<BrokerConnection, ConnectionError> {
        let (epoch, node) = {
            let mut links = self.links();
            if let Some(connection) = links.slot(link) {
                if !connection.is_closed() {
                    return Ok(connection.clone());
                }
            }
            (links.epoch, links.node.clone().ok_or_else(no_coordinator)?)
        };
        let connection = self.cluster.connect(&node.addr()).await?;
        let mut links = self.links();
        if links.epoch != epoch {
            connection.close();
            return Err(no_coordinator());
        }
        *links.slot(link) = Some(connection.clone());
        Ok(connection)
    }

    async fn exchange(
        &self,
        request: Request,
        timeout: Duration,
    ) -> Result<Response, ConnectionError> {
        match request {
            Request::FindCoordinator(find) => {
                let connection = self.cluster.any_broker().await?;
                let version = connection.version(ApiKey::FindCoordinator)?;
                let r = find.to_request(version);
                Ok(Response::FindCoordinator(
                    connection.send_with_timeout(&r, timeout).await?,
                ))
            }
            Request::JoinGroup(r) => {
                let connection = self.connection(Link::Join).await?;
                Ok(Response::JoinGroup(
                    connection.send_with_timeout(&r, timeout).await?,
                ))
            }
            Request::SyncGroup(r) => {
                let connection = self.connection(Link::Join).await?;
                Ok(Response::SyncGroup(
                    connection.send_with_timeout(&r, timeout).await?,
                ))
            }
            Request::Heartbeat(r) => {
                let connection = self.connection(Link::Control).await?;
                Ok(Response::Heartbeat(
                    connection.send_with_timeout(&r, timeout).await?,
                ))
            }
            Request::LeaveGroup(leave) => {
                let connection = self.connection(Link::Control).await?;
                let r = leave.to_request(connection.version(ApiKey::LeaveGroup)?);
                Ok(Response::LeaveGroup(
                    connection.send_with_timeout(&r, timeout).await?,
                ))
            }
        }
    }
}

impl Transport for KafkaTransport {
    fn send(self: Arc<Self>, request: Request, timeout: Duration) -> SendFuture {
        Box::pin(async move {
            let api_key = api_key(&request);
            // The timeout covers connecting too: the membership waits no longer than it said.
            match tokio::time::timeout(timeout, self.exchange(request, timeout)).await {
                Ok(result) => result,
                Err(_) => Err(ConnectionError::from(Detail::RequestTimeout {
                    addr: "coordinator".to_owned(),
                    api_key,
                    timeout,
                })),
            }
        })
    }

    fn set_coordinator(&self, coordinator: Option<&Coordinator>) {
        let mut links = self.links();
        let node = coordinator.map(|c| BrokerNode {
            node_id: c.node_id,
            host: c.host.clone(),
            port: c.port,
        });
        if links.node == node {
            return;
        }
        links.epoch += 1;
        links.node = node;
        for connection in [links.join.take(), links.control.take()]
            .into_iter()
            .flatten()
        {
            connection.close();
        }
    }
}

fn api_key(request: &Request) -> ApiKey {
    match request {
        Request::FindCoordinator(_) => ApiKey::FindCoordinator,
        Request::JoinGroup(_) => ApiKey::JoinGroup,
        Request::SyncGroup(_) => ApiKey::SyncGroup,
        Request::Heartbeat(_) => ApiKey::Heartbeat,
        Request::LeaveGroup(_) => ApiKey::LeaveGroup,
    }
}

fn no_coordinator() -> ConnectionError {
    ConnectionError::from(Detail::Closed {
        addr: "coordinator".to_owned(),
        reason: "the coordinator is unknown or moved; it is being rediscovered".to_owned(),
    })
}
