//! A secret's versions in force: the current one signs, and during a rotation the previous one
//! still verifies, so rotating a key mid-sale voids nothing already handed out.

/// A key made from a secret's bytes, refusing values too weak to use.
pub trait SecretKey: Send + Sync + Sized + 'static {
    /// What the key is, for errors and logs ("signing key").
    const WHAT: &'static str;
    /// Why some bytes are not a usable key.
    type Invalid: std::error::Error + Send + Sync + 'static;

    /// The key of these bytes, or why they are not one.
    fn from_secret(bytes: Vec<u8>) -> Result<Self, Self::Invalid>;
}

/// The versions of a secret in force: the current one and, after a rotation, the previous one.
#[derive(Debug, Clone)]
pub struct KeyRing<K> {
    current: K,
    previous: Option<K>,
}

impl<K> KeyRing<K> {
    /// The versions in force: `current`, and `previous` during a rotation.
    pub fn new(current: K, previous: Option<K>) -> Self {
        Self { current, previous }
    }

    /// A secret that is never rotated (a literal value from the environment).
    pub fn single(current: K) -> Self {
        Self::new(current, None)
    }

    /// The version new tokens and signatures are made with.
    pub fn current(&self) -> &K {
        &self.current
    }

    /// The version before the current one, during a rotation.
    pub fn previous(&self) -> Option<&K> {
        self.previous.as_ref()
    }

    /// Every version verification accepts, the current one first.
    pub fn versions(&self) -> impl Iterator<Item = &K> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }
}
