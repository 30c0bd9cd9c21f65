//! Settings a function reads from its environment, once, at cold start: a bad setting stops the
//! function before it takes a request instead of failing mid-request. Nothing else in Lineup
//! reads the environment.

use std::time::Duration;

use crate::signing::{KeyTooShort, SigningKey};

#[derive(Debug, Clone)]
pub struct Config {
    /// Where Redis is: `redis://host:port` (or `rediss://` for TLS, as ElastiCache Serverless
    /// requires), the bound on connecting and on each reply, and whether it is a cluster.
    pub redis: RedisSettings,
    /// Derives queue ids and signs access tokens.
    pub signing_key: SigningKey,
    /// The admit function's pace: one tick per `admit_tick`, for `admit_run` per invocation.
    pub admit_tick: Duration,
    pub admit_run: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    #[error("environment variable {name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("environment variable {name} must be a positive number of milliseconds")]
    NotMillis {
        name: &'static str,
        #[source]
        source: Option<std::num::ParseIntError>,
    },
    #[error("environment variable LINEUP_SIGNING_KEY is not usable")]
    SigningKey(#[source] KeyTooShort),
    #[error("environment variable LINEUP_WEBHOOK_SECRET is not usable")]
    WebhookSecret(#[source] crate::webhook_signature::SecretTooShort),
}

/// Where Redis is, for functions that need nothing else of [`Config`] (`confirm`, `expire`).
#[derive(Debug, Clone)]
pub struct RedisSettings {
    pub url: String,
    pub timeout: Duration,
    /// `REDIS_CLUSTER=true`: speak the cluster protocol (ElastiCache Serverless requires it).
    pub cluster: bool,
}

impl RedisSettings {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|name: &str| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let url = lookup("REDIS_URL")
            .filter(|v| !v.is_empty())
            .ok_or(ConfigError::Missing("REDIS_URL"))?;
        if !(url.starts_with("redis://") || url.starts_with("rediss://"))
            || redis::Client::open(url.as_str()).is_err()
        {
            return Err(ConfigError::Invalid {
                name: "REDIS_URL",
                reason: "expected redis://host:port or rediss://host:port".to_owned(),
            });
        }
        let cluster = match lookup("REDIS_CLUSTER").as_deref() {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "REDIS_CLUSTER",
                    reason: format!("expected true or false, got {other:?}"),
                })
            }
        };
        Ok(Self {
            url,
            timeout: millis(lookup, "REDIS_TIMEOUT_MS", Config::DEFAULT_REDIS_TIMEOUT)?,
            cluster,
        })
    }
}

/// A positive number of milliseconds, or `default` when unset.
fn millis(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match lookup(name) {
        None => Ok(default),
        Some(raw) => match raw.parse::<u64>() {
            Ok(0) => Err(ConfigError::NotMillis { name, source: None }),
            Ok(ms) => Ok(Duration::from_millis(ms)),
            Err(source) => Err(ConfigError::NotMillis {
                name,
                source: Some(source),
            }),
        },
    }
}

impl Config {
    pub const DEFAULT_REDIS_TIMEOUT: Duration = Duration::from_millis(1_000);
    pub const DEFAULT_ADMIT_TICK: Duration = Duration::from_millis(1_000);
    pub const DEFAULT_ADMIT_RUN: Duration = Duration::from_secs(55);

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The same, from any lookup: tests pass a map instead of touching the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let required = |name: &'static str| {
            lookup(name)
                .filter(|v| !v.is_empty())
                .ok_or(ConfigError::Missing(name))
        };
        let millis = |name, default| millis(&lookup, name, default);

        let redis = RedisSettings::from_lookup(&lookup)?;
        let signing_key = SigningKey::new(required("LINEUP_SIGNING_KEY")?.into_bytes())
            .map_err(ConfigError::SigningKey)?;

        Ok(Self {
            redis,
            signing_key,
            admit_tick: millis("ADMIT_TICK_MS", Self::DEFAULT_ADMIT_TICK)?,
            admit_run: millis("ADMIT_RUN_MS", Self::DEFAULT_ADMIT_RUN)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| vars.get(name).cloned())
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn minimal_settings_take_defaults() {
        let config = config(&[
            ("REDIS_URL", "redis://127.0.0.1:6379"),
            ("LINEUP_SIGNING_KEY", KEY),
        ])
        .unwrap();
        assert_eq!(config.admit_tick, Config::DEFAULT_ADMIT_TICK);
        assert_eq!(config.admit_run, Config::DEFAULT_ADMIT_RUN);
    }

    #[tokio::test]
    async fn tls_redis_urls_are_accepted() {
        // ElastiCache Serverless only speaks TLS: the redis client must be built with it.
        let config = config(&[
            ("REDIS_URL", "rediss://cache.example.com:6379"),
            ("LINEUP_SIGNING_KEY", KEY),
        ])
        .unwrap();
        assert!(crate::queue::redis::RedisQueue::open(&config.redis).is_ok());
    }

    #[test]
    fn bad_settings_fail_at_start() {
        assert!(matches!(
            config(&[("LINEUP_SIGNING_KEY", KEY)]),
            Err(ConfigError::Missing("REDIS_URL"))
        ));
        assert!(matches!(
            config(&[("REDIS_URL", "http://x"), ("LINEUP_SIGNING_KEY", KEY)]),
            Err(ConfigError::Invalid {
                name: "REDIS_URL",
                ..
            })
        ));
        assert!(matches!(
            config(&[("REDIS_URL", "redis://x"), ("LINEUP_SIGNING_KEY", "short")]),
            Err(ConfigError::SigningKey(_))
        ));
        assert!(matches!(
            config(&[
                ("REDIS_URL", "redis://x"),
                ("LINEUP_SIGNING_KEY", KEY),
                ("ADMIT_TICK_MS", "0")
            ]),
            Err(ConfigError::NotMillis {
                name: "ADMIT_TICK_MS",
                ..
            })
        ));
    }
}
