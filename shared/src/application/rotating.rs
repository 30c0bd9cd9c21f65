//! The in-memory copy of a secret's versions, refreshed after a bounded time.
//!
//! Requests read the cached [`KeyRing`] without waiting. Once it is older than
//! [`REFRESH_AFTER`], the next request to call [`Rotating::refresh_if_stale`] fetches the secret
//! again, and only that one: any request arriving meanwhile goes on with the cached keys. (A
//! Lambda instance serves one request at a time anyway; `lineup dev` and tests serve many.) A
//! failed refresh keeps the last good keys, logs a warning, and is tried again after
//! [`RETRY_AFTER_FAILURE`]: requests never fail while a known key is still usable.
//!
//! A rotation reaches instances at different times: one that refreshed signs with the new key
//! while another still knows only the old ones. So a check that finds no matching key (a token
//! naming an unknown key id, a queue id or webhook signature matching no version) calls
//! [`Rotating::refresh_after_miss`] and checks once more: the instance fetches at once, at most
//! once per [`MIN_MISS_REFRESH`], so a flood of forged tokens costs one fetch per half minute.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use crate::application::ports::secrets::{SecretFetcher, SecretsError};
use crate::domain::ids::{CustomerId, EventId, QueueId};
use crate::domain::keys::{KeyRing, SecretKey};
use crate::domain::signing::{QueueTicket, SigningKey};
use crate::domain::webhook_signature::{SignatureRefused, WebhookSecret};

/// How long fetched keys are used before they are fetched again: how long a rotation may take
/// to reach every running instance.
pub const REFRESH_AFTER: Duration = Duration::from_secs(5 * 60);
/// How long after a failed refresh the next one is tried (not on every request: Secrets
/// Manager being down must not add a timeout to each of them).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);
/// The least time between two fetches forced by a key the cache does not know.
pub const MIN_MISS_REFRESH: Duration = Duration::from_secs(30);

/// A secret's versions, shared by every request a function serves (cloning shares them).
pub struct Rotating<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for Rotating<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Rotating<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rotating")
            .field(
                "secret",
                &self.inner.refresher.as_ref().map(|r| r.fetcher.secret_id()),
            )
            .finish_non_exhaustive()
    }
}

struct Inner<K> {
    ring: RwLock<Arc<KeyRing<K>>>,
    /// `None` for a literal key: nothing to refresh.
    refresher: Option<Refresher>,
}

struct Refresher {
    fetcher: Arc<dyn SecretFetcher>,
    every: Duration,
    /// When the next refresh is due.
    due: Mutex<Instant>,
    /// Set while one request refreshes.
    busy: AtomicBool,
    version_id: Mutex<Option<String>>,
    /// How soon after the last fetch a miss may force another, and when that last fetch was.
    miss_every: Duration,
    last_fetch: Mutex<Instant>,
}

/// Clears `busy` however the refresh ends (also if the request is dropped mid-way).
struct Busy<'a>(&'a AtomicBool);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<K> From<K> for Rotating<K> {
    /// A key that never changes (a literal from the environment, tests).
    fn from(key: K) -> Self {
        Self::fixed(KeyRing::single(key))
    }
}

impl<K> Rotating<K> {
    /// These versions for good: never fetched again (literal keys, tests).
    pub fn fixed(ring: KeyRing<K>) -> Self {
        Self {
            inner: Arc::new(Inner {
                ring: RwLock::new(Arc::new(ring)),
                refresher: None,
            }),
        }
    }

    /// The keys in force now, without waiting.
    pub fn ring(&self) -> Arc<KeyRing<K>> {
        self.inner
            .ring
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<K: SecretKey> Rotating<K> {
    /// Fetches the versions now, and again `every` so often (or after a miss, at most every
    /// [`MIN_MISS_REFRESH`]).
    pub async fn fetched(
        fetcher: Arc<dyn SecretFetcher>,
        every: Duration,
    ) -> Result<Self, SecretsError> {
        Self::fetched_with(fetcher, every, every.min(MIN_MISS_REFRESH)).await
    }

    /// [`Rotating::fetched`], with the least time between fetches forced by misses.
    pub async fn fetched_with(
        fetcher: Arc<dyn SecretFetcher>,
        every: Duration,
        miss_every: Duration,
    ) -> Result<Self, SecretsError> {
        let versions = fetcher.fetch().await?;
        let version_id = versions.current_version_id.clone();
        let ring = KeyRing::from_versions(fetcher.secret_id(), versions)?;
        tracing::info!(
            secret = fetcher.secret_id(),
            version = version_id.as_deref().unwrap_or("unknown"),
            previous = ring.previous().is_some(),
            "loaded the {}",
            K::WHAT
        );
        Ok(Self {
            inner: Arc::new(Inner {
                ring: RwLock::new(Arc::new(ring)),
                refresher: Some(Refresher {
                    fetcher,
                    every,
                    due: Mutex::new(Instant::now() + every),
                    busy: AtomicBool::new(false),
                    version_id: Mutex::new(version_id),
                    miss_every,
                    last_fetch: Mutex::new(Instant::now()),
                }),
            }),
        })
    }

    /// Fetches the versions now, whatever their age; on failure the keys in force stay. A
    /// literal key has nothing to fetch.
    pub async fn refresh(&self) -> Result<(), SecretsError> {
        let Some(refresher) = &self.inner.refresher else {
            return Ok(());
        };
        let versions = refresher.fetcher.fetch().await?;
        *refresher
            .last_fetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        let version_id = versions.current_version_id.clone();
        let ring = KeyRing::from_versions(refresher.fetcher.secret_id(), versions)?;
        *self
            .inner
            .ring
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(ring);
        let mut known = refresher
            .version_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *known != version_id {
            tracing::info!(
                secret = refresher.fetcher.secret_id(),
                version = version_id.as_deref().unwrap_or("unknown"),
                "picked up a new version of the {}",
                K::WHAT
            );
            *known = version_id;
        }
        Ok(())
    }

    /// Refreshes when the keys are older than the refresh interval, unless another request is
    /// already doing it. Never fails: a failed refresh is logged and the cached keys stay.
    pub async fn refresh_if_stale(&self) {
        let Some(refresher) = &self.inner.refresher else {
            return;
        };
        let due = || *refresher.due.lock().unwrap_or_else(PoisonError::into_inner);
        if Instant::now() < due() || refresher.busy.swap(true, Ordering::AcqRel) {
            return;
        }
        let _busy = Busy(&refresher.busy);
        // Another request may have finished a refresh between the two checks.
        if Instant::now() < due() {
            return;
        }
        let next = match self.refresh().await {
            Ok(()) => refresher.every,
            Err(error) => {
                tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "could not refresh the {}; keeping the keys in force", K::WHAT);
                RETRY_AFTER_FAILURE.min(refresher.every)
            }
        };
        *refresher.due.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now() + next;
    }
}

impl<K: SecretKey> Rotating<K> {
    /// A check found no matching key: fetches the versions now, unless the last fetch is less
    /// than the miss interval old or another request is fetching. `true` when the keys were
    /// fetched again (worth checking once more), `false` otherwise. Never fails.
    pub async fn refresh_after_miss(&self) -> bool {
        let Some(refresher) = &self.inner.refresher else {
            return false;
        };
        let last = *refresher
            .last_fetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.elapsed() < refresher.miss_every || refresher.busy.swap(true, Ordering::AcqRel) {
            return false;
        }
        let _busy = Busy(&refresher.busy);
        // A failed fetch counts too: an outage is not retried on every forged token.
        *refresher
            .last_fetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        match self.refresh().await {
            Ok(()) => {
                *refresher.due.lock().unwrap_or_else(PoisonError::into_inner) =
                    Instant::now() + refresher.every;
                true
            }
            Err(error) => {
                tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "could not fetch the {} after a miss; keeping the keys in force", K::WHAT);
                false
            }
        }
    }
}

/// The signing key's versions in force, as the queue and hold functions hold them.
pub type SigningKeys = Rotating<SigningKey>;

impl Rotating<SigningKey> {
    /// The version that makes new queue ids and tokens.
    pub fn current(&self) -> SigningKey {
        self.ring().current().clone()
    }

    /// A ticket for `customer`'s place, signed with the current key.
    pub fn queue_ticket(
        &self,
        event: &EventId,
        customer: &CustomerId,
        ticket: QueueTicket,
    ) -> QueueId {
        self.ring().current().queue_ticket(event, customer, ticket)
    }

    /// The ticket, if `claimed` is the caller's own for this event under the current or the
    /// previous key. Both are checked, in constant time, whichever matches.
    pub fn open_ticket(
        &self,
        claimed: &QueueId,
        event: &EventId,
        caller: &CustomerId,
    ) -> Option<QueueTicket> {
        self.ring().open_ticket(claimed, event, caller)
    }
}

/// The webhook secret's versions in force, as the `confirm` function holds them.
pub type WebhookSecrets = Rotating<WebhookSecret>;

impl Rotating<WebhookSecret> {
    /// [`KeyRing::verify`] with the versions in force now.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureRefused> {
        self.ring().verify(header, body, now)
    }

    /// [`KeyRing::verify_as`] with the versions in force now.
    pub fn verify_as(
        &self,
        scheme: crate::domain::webhook_signature::Scheme,
        header: Option<&str>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureRefused> {
        self.ring().verify_as(scheme, header, body, now)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use async_trait::async_trait;
    use tokio::sync::Notify;

    use super::*;
    use crate::application::ports::secrets::SecretVersions;

    /// A key that is its bytes (at least 4 of them).
    #[derive(Debug, PartialEq)]
    struct TestKey(Vec<u8>);

    #[derive(Debug, thiserror::Error)]
    #[error("too short")]
    struct TooShort;

    impl SecretKey for TestKey {
        const WHAT: &'static str = "test key";
        type Invalid = TooShort;
        fn from_secret(bytes: Vec<u8>) -> Result<Self, TooShort> {
            if bytes.len() < 4 {
                return Err(TooShort);
            }
            Ok(Self(bytes))
        }
    }

    /// A stored secret: the current value and the previous one.
    type Stored = (Vec<u8>, Option<Vec<u8>>);

    /// Answers with whatever `value` holds (`None`: an outage), counting fetches; optionally
    /// waits for `gate` first.
    #[derive(Default)]
    struct FakeStore {
        value: Mutex<Option<Stored>>,
        fetches: AtomicUsize,
        gate: Option<Arc<Notify>>,
    }

    impl FakeStore {
        fn holding(current: &[u8]) -> Self {
            let store = Self::default();
            store.set(Some((current.to_vec(), None)));
            store
        }

        fn set(&self, value: Option<Stored>) {
            *self.value.lock().unwrap() = value;
        }
    }

    #[async_trait]
    impl SecretFetcher for FakeStore {
        fn secret_id(&self) -> &str {
            "test-secret"
        }

        async fn fetch(&self) -> Result<SecretVersions, SecretsError> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            if let Some(gate) = &self.gate {
                gate.notified().await;
            }
            let value = self.value.lock().unwrap().clone();
            match value {
                Some((current, previous)) => Ok(SecretVersions {
                    current: current.clone(),
                    previous,
                    current_version_id: Some(format!("{current:?}")),
                }),
                None => Err(SecretsError::Empty {
                    secret_id: "test-secret".to_owned(),
                    stage: "AWSCURRENT",
                }),
            }
        }
    }

    fn current(keys: &Rotating<TestKey>) -> Vec<u8> {
        keys.ring().current().0.clone()
    }

    #[tokio::test]
    async fn fresh_keys_are_not_fetched_again_and_stale_ones_are() {
        let store = Arc::new(FakeStore::holding(b"key-1"));
        let keys = Rotating::<TestKey>::fetched(store.clone(), Duration::from_secs(3600))
            .await
            .unwrap();
        store.set(Some((b"key-2".to_vec(), Some(b"key-1".to_vec()))));
        keys.refresh_if_stale().await;
        assert_eq!(store.fetches.load(Ordering::SeqCst), 1, "fresh: no fetch");
        assert_eq!(current(&keys), b"key-1");

        let keys = Rotating::<TestKey>::fetched(store.clone(), Duration::ZERO)
            .await
            .unwrap();
        store.set(Some((b"key-3".to_vec(), Some(b"key-2".to_vec()))));
        keys.refresh_if_stale().await;
        assert_eq!(current(&keys), b"key-3");
        assert_eq!(
            keys.ring().previous().map(|k| k.0.clone()),
            Some(b"key-2".to_vec())
        );
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_the_last_good_keys() {
        let store = Arc::new(FakeStore::holding(b"key-1"));
        let keys = Rotating::<TestKey>::fetched(store.clone(), Duration::ZERO)
            .await
            .unwrap();
        store.set(None);
        assert!(keys.refresh().await.is_err());
        keys.refresh_if_stale().await;
        assert_eq!(current(&keys), b"key-1");
        // A rotated value too short to be a key is refused the same way.
        store.set(Some((b"k".to_vec(), Some(b"key-1".to_vec()))));
        assert!(matches!(
            keys.refresh().await,
            Err(SecretsError::Unusable { .. })
        ));
        assert_eq!(current(&keys), b"key-1");
    }

    #[tokio::test]
    async fn an_unusable_previous_version_is_left_out() {
        let store = Arc::new(FakeStore::default());
        store.set(Some((b"key-2".to_vec(), Some(b"k".to_vec()))));
        let keys = Rotating::<TestKey>::fetched(store, Duration::ZERO)
            .await
            .unwrap();
        assert!(keys.ring().previous().is_none());
    }

    #[tokio::test]
    async fn an_unreadable_or_unusable_secret_stops_the_cold_start() {
        let store = Arc::new(FakeStore::default());
        assert!(Rotating::<TestKey>::fetched(store.clone(), REFRESH_AFTER)
            .await
            .is_err());
        store.set(Some((b"k".to_vec(), None)));
        assert!(matches!(
            Rotating::<TestKey>::fetched(store, REFRESH_AFTER).await,
            Err(SecretsError::Unusable { .. })
        ));
    }

    #[tokio::test]
    async fn only_one_request_refreshes_while_the_others_use_the_cached_keys() {
        let gate = Arc::new(Notify::new());
        let store = Arc::new(FakeStore::holding(b"key-1"));
        let keys = Rotating::<TestKey>::fetched(store.clone(), Duration::ZERO)
            .await
            .unwrap();
        let gated = Arc::new(FakeStore {
            gate: Some(gate.clone()),
            ..FakeStore::holding(b"key-2")
        });
        // The same cache, now backed by a store that stalls until the gate opens.
        let keys = Rotating {
            inner: Arc::new(Inner {
                ring: RwLock::new(keys.ring()),
                refresher: Some(Refresher {
                    fetcher: gated.clone(),
                    every: Duration::ZERO,
                    due: Mutex::new(Instant::now()),
                    busy: AtomicBool::new(false),
                    version_id: Mutex::new(None),
                    miss_every: Duration::ZERO,
                    last_fetch: Mutex::new(Instant::now()),
                }),
            }),
        };
        let refreshing = tokio::spawn({
            let keys = keys.clone();
            async move { keys.refresh_if_stale().await }
        });
        while gated.fetches.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // Ten more requests while the refresh stalls: none waits, none fetches.
        for _ in 0..10 {
            tokio::time::timeout(Duration::from_secs(1), keys.refresh_if_stale())
                .await
                .expect("a request does not wait for another's refresh");
            assert_eq!(current(&keys), b"key-1");
        }
        assert_eq!(gated.fetches.load(Ordering::SeqCst), 1);
        gate.notify_one();
        refreshing.await.unwrap();
        assert_eq!(current(&keys), b"key-2");
        assert_eq!(store.fetches.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_miss_fetches_at_once_but_not_more_often_than_the_miss_interval() {
        let store = Arc::new(FakeStore::holding(b"key-1"));
        let hour = Duration::from_secs(3600);
        // An instance that fetched before the rotation.
        let eager = Rotating::<TestKey>::fetched_with(store.clone(), hour, Duration::ZERO)
            .await
            .unwrap();
        let limited = Rotating::<TestKey>::fetched_with(store.clone(), hour, hour)
            .await
            .unwrap();
        store.set(Some((b"key-2".to_vec(), Some(b"key-1".to_vec()))));
        let fetches = store.fetches.load(Ordering::SeqCst);

        assert!(eager.refresh_after_miss().await, "a miss fetches at once");
        assert_eq!(current(&eager), b"key-2");
        assert!(
            !limited.refresh_after_miss().await,
            "a miss within the interval of the last fetch fetches nothing"
        );
        assert_eq!(current(&limited), b"key-1");
        assert_eq!(store.fetches.load(Ordering::SeqCst), fetches + 1);

        // A failed fetch after a miss keeps the keys and says so.
        store.set(None);
        assert!(!eager.refresh_after_miss().await);
        assert_eq!(current(&eager), b"key-2");
        assert!(
            !Rotating::from(TestKey(b"literal".to_vec()))
                .refresh_after_miss()
                .await
        );
    }

    #[tokio::test]
    async fn a_literal_key_is_never_fetched() {
        let keys = Rotating::from(TestKey(b"literal".to_vec()));
        keys.refresh_if_stale().await;
        assert!(keys.refresh().await.is_ok());
        assert_eq!(current(&keys), b"literal");
    }
}
