//! The Redis connection the queue adapter talks through: one multiplexed connection to a single
//! server (local Redis, a non-clustered cache), or a cluster-aware one (ElastiCache Serverless
//! only speaks cluster mode: it answers MOVED for keys on another shard). Both connect lazily and
//! reconnect on their own, so a cold start with Redis unreachable still answers 503 and recovers.
//!
//! In AWS each function signs in as its own Redis user, allowed only the keys and commands it
//! uses (`template.yaml`, docs/decisions/0026-redis-user-per-function.md): a [`RedisUser`] is
//! what the configuration names, [`RedisUser::sign_in`] fetches its password at cold start, and
//! every connection (reconnections included) authenticates with the [`RedisCredentials`] it
//! gives. Locally (`lineup dev`, the tests) there is no user: the default user is used.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use crate::adapters::secret_source::KeySource;
use crate::application::ports::secrets::SecretsError;
use crate::domain::keys::SecretKey;

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

/// The Redis user a function signs in as (`REDIS_USER`), and where its password comes from
/// (`LINEUP_REDIS_PASSWORD_SECRET_ARN` in AWS, `LINEUP_REDIS_PASSWORD` locally).
#[derive(Debug, Clone)]
pub struct RedisUser {
    /// The user's name, as `AUTH` takes it.
    pub name: String,
    /// The user's password: fetched at cold start.
    pub password: KeySource<RedisPassword>,
}

impl RedisUser {
    /// At cold start: the user with its password, read from Secrets Manager (or the literal,
    /// locally). A password that cannot be read stops the function here, before it takes a
    /// request.
    pub async fn sign_in(self) -> Result<RedisCredentials, SecretsError> {
        let password = self.password.load().await?.ring().current().clone();
        Ok(RedisCredentials {
            user: self.name,
            password,
        })
    }
}

/// A Redis user and its password, as fetched: what every connection authenticates with.
#[derive(Debug, Clone)]
pub struct RedisCredentials {
    /// The user's name.
    pub user: String,
    /// Its password.
    pub password: RedisPassword,
}

/// A Redis user's password. Never printed, even in a debug log.
#[derive(Clone)]
pub struct RedisPassword(String);

impl RedisPassword {
    /// The password itself, for `AUTH` only.
    fn reveal(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for RedisPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisPassword(<redacted>)")
    }
}

/// Why some bytes are not a Redis user's password: ElastiCache takes 16 to 128 printable
/// characters without spaces.
#[derive(Debug, thiserror::Error)]
#[error(
    "a Redis password is 16 to 128 printable ASCII characters without spaces \
     (got {length} bytes, all printable: {printable})"
)]
pub struct UnusableRedisPassword {
    /// How long the value is, in bytes.
    pub length: usize,
    /// Whether every byte is printable ASCII other than a space.
    pub printable: bool,
}

impl SecretKey for RedisPassword {
    const WHAT: &'static str = "Redis password";
    type Invalid = UnusableRedisPassword;

    fn from_secret(bytes: Vec<u8>) -> Result<Self, UnusableRedisPassword> {
        let printable = bytes.iter().all(|byte| byte.is_ascii_graphic());
        if !printable || !(16..=128).contains(&bytes.len()) {
            return Err(UnusableRedisPassword {
                length: bytes.len(),
                printable,
            });
        }
        let password = String::from_utf8(bytes).expect("printable ASCII is UTF-8");
        Ok(Self(password))
    }
}

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
    /// To the Redis `settings` name, signed in as `user` (`None`: the default user, as
    /// locally). `settings.timeout` bounds connecting and each reply. Fails only on an unusable
    /// URL; a wrong password shows on first use, as a refused connection.
    pub fn open(settings: &RedisSettings, user: Option<&RedisCredentials>) -> RedisResult<Self> {
        let RedisSettings {
            url,
            timeout,
            cluster,
        } = settings;
        if *cluster {
            let mut builder = ClusterClientBuilder::new(vec![url.as_str()])
                .connection_timeout(*timeout)
                .response_timeout(*timeout)
                .retries(1);
            if let Some(user) = user {
                builder = builder
                    .username(&user.user)
                    .password(user.password.reveal());
            }
            return Ok(Self::Cluster(Arc::new(LazyCluster {
                client: builder.build()?,
                connection: OnceCell::new(),
            })));
        }
        let mut server = url.as_str().into_connection_info()?;
        if let Some(user) = user {
            let signed_in = server
                .redis_settings()
                .clone()
                .set_username(&user.user)
                .set_password(user.password.reveal());
            server = server.set_redis_settings(signed_in);
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(*timeout))
            .set_response_timeout(Some(*timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection =
            ConnectionManager::new_lazy_with_config(redis::Client::open(server)?, config)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: &str = "Abcdefgh0123456789Abcdefgh012345";

    #[test]
    fn a_password_is_never_printed() {
        let credentials = RedisCredentials {
            user: "lineup-status".to_owned(),
            password: RedisPassword::from_secret(PASSWORD.as_bytes().to_vec()).unwrap(),
        };
        let printed = format!("{credentials:?}");
        assert!(printed.contains("lineup-status"), "{printed}");
        assert!(!printed.contains(PASSWORD), "{printed}");
    }

    #[test]
    fn a_password_is_16_to_128_printable_characters_without_spaces() {
        let password = |text: &str| RedisPassword::from_secret(text.as_bytes().to_vec());
        assert!(password(PASSWORD).is_ok());
        assert!(password(&"x".repeat(128)).is_ok());
        for unusable in [
            "",
            "fifteen-chars!!",
            &"x".repeat(129),
            "sixteen chars ok",
            "tab\there-and-more-text",
        ] {
            assert!(password(unusable).is_err(), "{unusable:?}");
        }
    }

    #[tokio::test]
    async fn a_user_signs_in_with_its_literal_password_locally() {
        let user = RedisUser {
            name: "lineup-join".to_owned(),
            password: KeySource::Literal(
                RedisPassword::from_secret(PASSWORD.as_bytes().to_vec()).unwrap(),
            ),
        };
        let credentials = user.sign_in().await.unwrap();
        assert_eq!(credentials.user, "lineup-join");
        assert_eq!(credentials.password.reveal(), PASSWORD);
        // Both connection kinds take a user and a TLS URL without connecting.
        for cluster in [false, true] {
            let settings = RedisSettings {
                url: "rediss://cache.example.com:6379".to_owned(),
                timeout: REDIS_DEFAULT_TIMEOUT,
                cluster,
            };
            assert!(RedisConnection::open(&settings, Some(&credentials)).is_ok());
        }
    }
}
