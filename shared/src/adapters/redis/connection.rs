//! The Redis connection the queue adapter talks through: one multiplexed connection to a single
//! server (local Redis, a non-clustered cache), or a cluster-aware one (ElastiCache Serverless
//! only speaks cluster mode: it answers MOVED for keys on another shard). Both connect lazily and
//! reconnect on their own, so a cold start with Redis unreachable still answers 503 and recovers.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

/// Where Redis is: `redis://host:port` (or `rediss://` for TLS, as ElastiCache Serverless
/// requires), the bound on connecting and on each reply, and whether it is a cluster.
#[derive(Debug, Clone)]
pub struct RedisSettings {
    /// `redis://host:port` or `rediss://host:port`.
    pub url: String,
    /// The bound on connecting and on each reply.
    pub timeout: Duration,
    /// `REDIS_CLUSTER=true`: speak the cluster protocol (ElastiCache Serverless requires it).
    pub cluster: bool,
}

/// The bound on connecting and on each reply, unless configured.
pub const REDIS_DEFAULT_TIMEOUT: Duration = Duration::from_millis(1_000);

/// A connection to Redis, cheap to clone (clones share it).
#[derive(Clone)]
pub enum RedisConnection {
    /// One server (local Redis, a non-clustered cache), reconnecting on its own.
    Single(ConnectionManager),
    /// A cluster (`REDIS_CLUSTER=true`), connected on first use.
    Cluster(Arc<LazyCluster>),
}

/// A cluster client whose connection is made on first use, not at cold start.
pub struct LazyCluster {
    client: ClusterClient,
    connection: OnceCell<ClusterConnection>,
}

impl LazyCluster {
    /// The cluster connection, made on first use; a failed attempt is retried by the next call.
    async fn get(&self) -> RedisResult<ClusterConnection> {
        self.connection
            .get_or_try_init(|| self.client.get_async_connection())
            .await
            .cloned()
    }
}

impl RedisConnection {
    /// `timeout` bounds connecting and each reply. Fails only on an unusable URL.
    pub fn open(url: &str, cluster: bool, timeout: Duration) -> RedisResult<Self> {
        if cluster {
            let client = ClusterClientBuilder::new(vec![url])
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .retries(1)
                .build()?;
            return Ok(Self::Cluster(Arc::new(LazyCluster {
                client,
                connection: OnceCell::new(),
            })));
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection =
            ConnectionManager::new_lazy_with_config(redis::Client::open(url)?, config)?;
        Ok(Self::Single(connection))
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            Self::Cluster(cluster) => {
                Box::pin(async move { cluster.get().await?.req_packed_command(cmd).await })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Cluster(cluster) => Box::pin(async move {
                cluster
                    .get()
                    .await?
                    .req_packed_commands(pipeline, offset, count)
                    .await
            }),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}
