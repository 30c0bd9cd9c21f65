//! The local stand-ins for AWS that `lineup dev` runs: a private, memory-only redis-server (for
//! ElastiCache) and the serialised moto server (DynamoDB, DynamoDB Streams, SQS). What is missing
//! is installed by the same shell functions the test command uses (`scripts/local-stack.sh`);
//! the processes are this one's children, stopped when it stops.
//!
//! The installer and the moto launcher (`scripts/moto_server.py`) are compiled into the binary and
//! written to a cache directory ([`CacheDir`]) before use, so a `lineup` copied anywhere, or
//! installed with `cargo install --path cli`, runs without the source tree and from any working
//! directory. The same directory keeps the moto venv and the services' logs: installed once,
//! reused by every later run (and by every checkout, which share one venv instead of one each).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// The installer's shell functions (`ensure_redis_server`, `ensure_moto`), as built.
const LOCAL_STACK_SH: &str = include_str!("../../scripts/local-stack.sh");
/// moto with DynamoDB requests serialised, as built.
const MOTO_SERVER_PY: &str = include_str!("../../scripts/moto_server.py");

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("installing the local services failed ({script} exited with {status})")]
    Install {
        script: PathBuf,
        status: std::process::ExitStatus,
    },
    #[error("something already answers on 127.0.0.1:{0}; pick another port")]
    PortTaken(u16),
    #[error("could not start {program}")]
    Spawn {
        program: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{service} did not come up on 127.0.0.1:{port} within {waited:?}; see {log}")]
    NotReady {
        service: &'static str,
        port: u16,
        waited: Duration,
        log: String,
    },
    #[error("could not create {0}")]
    Directory(PathBuf, #[source] std::io::Error),
    #[error("could not write {0}")]
    Write(PathBuf, #[source] std::io::Error),
    #[error(
        "no cache directory: set LINEUP_CACHE_DIR (or pass --cache-dir), XDG_CACHE_HOME or HOME"
    )]
    NoCacheDir,
}

/// Where `lineup dev` keeps what outlives a run: the moto venv (`venv/`), the compiled-in helper
/// scripts (`embedded/<digest>/`, one directory per version of them, so two builds running at
/// once never rewrite each other's), and the services' logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheDir(PathBuf);

impl CacheDir {
    /// `explicit` (`--cache-dir` / `LINEUP_CACHE_DIR`), else `$XDG_CACHE_HOME/lineup`, else
    /// `$HOME/.cache/lineup`, from the process environment.
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, StackError> {
        Self::resolve_with(explicit, |name| std::env::var_os(name))
    }

    /// The same, from any lookup: tests pass a map instead of touching the environment.
    pub fn resolve_with(
        explicit: Option<&Path>,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, StackError> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let dir = if let Some(explicit) = explicit.filter(|path| !path.as_os_str().is_empty()) {
            // Relative to where `lineup` was started: the installer runs elsewhere.
            std::path::absolute(explicit)
                .map_err(|source| StackError::Directory(explicit.to_path_buf(), source))?
        } else if let Some(xdg) = set("XDG_CACHE_HOME")
            .map(PathBuf::from)
            // The XDG spec: a relative value is invalid and must be ignored.
            .filter(|path| path.is_absolute())
        {
            xdg.join("lineup")
        } else if let Some(home) = set("HOME") {
            PathBuf::from(home).join(".cache").join("lineup")
        } else {
            return Err(StackError::NoCacheDir);
        };
        Ok(Self(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    fn venv_python(&self) -> PathBuf {
        self.0.join("venv/bin/python")
    }

    /// Writes the compiled-in scripts (if this version of them is not there yet) and says where.
    fn scripts(&self) -> Result<Scripts, StackError> {
        let mut digest = Sha256::new();
        for text in [LOCAL_STACK_SH, MOTO_SERVER_PY] {
            digest.update((text.len() as u64).to_le_bytes());
            digest.update(text.as_bytes());
        }
        let dir = self
            .0
            .join("embedded")
            .join(&hex::encode(digest.finalize())[..16]);
        std::fs::create_dir_all(&dir)
            .map_err(|source| StackError::Directory(dir.clone(), source))?;
        Ok(Scripts {
            local_stack: write_if_changed(&dir.join("local-stack.sh"), LOCAL_STACK_SH)?,
            moto_server: write_if_changed(&dir.join("moto_server.py"), MOTO_SERVER_PY)?,
        })
    }
}

/// The helper scripts as written to the cache.
struct Scripts {
    local_stack: PathBuf,
    moto_server: PathBuf,
}

/// Writes `text` to `path` unless it is there already, through a temporary file and a rename, so
/// a concurrent `lineup dev` never reads half a script.
fn write_if_changed(path: &Path, text: &str) -> Result<PathBuf, StackError> {
    if std::fs::read(path).is_ok_and(|current| current == text.as_bytes()) {
        return Ok(path.to_path_buf());
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            StackError::Write(path.to_path_buf(), source)
        })?;
    Ok(path.to_path_buf())
}

/// The running services. Dropping it kills them; [`LocalStack::stop`] also waits for them.
pub struct LocalStack {
    children: Vec<(&'static str, Child)>,
    pub redis_url: String,
    pub aws_endpoint_url: String,
}

pub struct StackPorts {
    pub redis: u16,
    pub moto: u16,
}

impl LocalStack {
    /// Installs what is missing (Debian's redis-server; a venv with moto in the cache
    /// directory), then starts both and waits until they answer.
    pub async fn start(cache: &CacheDir, ports: &StackPorts) -> Result<Self, StackError> {
        let local_dir = cache.path();
        std::fs::create_dir_all(local_dir)
            .map_err(|source| StackError::Directory(local_dir.to_path_buf(), source))?;
        for port in [ports.redis, ports.moto] {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Err(StackError::PortTaken(port));
            }
        }
        let scripts = cache.scripts()?;
        install(cache, &scripts.local_stack).await?;

        let mut stack = Self {
            children: Vec::new(),
            redis_url: format!("redis://127.0.0.1:{}", ports.redis),
            aws_endpoint_url: format!("http://127.0.0.1:{}", ports.moto),
        };
        let redis_log = local_dir.join(format!("dev-redis-{}.log", ports.redis));
        let redis = Command::new("redis-server")
            .args(["--port", &ports.redis.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--logfile"])
            .arg(&redis_log)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| StackError::Spawn {
                program: "redis-server",
                source,
            })?;
        stack.children.push(("redis-server", redis));
        wait_until("redis-server", ports.redis, &redis_log, redis_answers).await?;

        let moto_log = local_dir.join(format!("dev-moto-{}.log", ports.moto));
        let log_file = std::fs::File::create(&moto_log)
            .map_err(|source| StackError::Directory(moto_log.clone(), source))?;
        let log_copy = log_file
            .try_clone()
            .map_err(|source| StackError::Directory(moto_log.clone(), source))?;
        let moto = Command::new(cache.venv_python())
            .arg(&scripts.moto_server)
            .args(["--port", &ports.moto.to_string()])
            // Where the serialised emulator's time goes, every 10 s, in its log.
            .args(["--stats-every", "10"])
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_copy)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| StackError::Spawn {
                program: "moto (moto_server.py in the cache directory's venv)",
                source,
            })?;
        stack.children.push(("moto", moto));
        wait_until("moto", ports.moto, &moto_log, moto_answers).await?;
        Ok(stack)
    }

    /// Stops every process it started and waits for each to exit.
    pub async fn stop(mut self) {
        for (name, child) in &mut self.children {
            if let Err(error) = child.kill().await {
                tracing::warn!(service = *name, error = %error, "could not stop");
            }
        }
        self.children.clear();
    }
}

/// `ensure_redis_server` and `ensure_moto` from the written installer, with the cache
/// directory as its `LOCAL_DIR` (where `ensure_moto` keeps the venv it reuses).
async fn install(cache: &CacheDir, script: &Path) -> Result<(), StackError> {
    let status = Command::new("bash")
        .arg("-c")
        .arg(r#"set -euo pipefail; source "$1"; ensure_redis_server; ensure_moto"#)
        .arg("lineup-install")
        .arg(script)
        .env("LOCAL_DIR", cache.path())
        .current_dir(cache.path())
        .stdin(Stdio::null())
        .status()
        .await
        .map_err(|source| StackError::Spawn {
            program: "bash",
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(StackError::Install {
            script: script.to_path_buf(),
            status,
        })
    }
}

async fn wait_until<F, Fut>(
    service: &'static str,
    port: u16,
    log: &Path,
    answers: F,
) -> Result<(), StackError>
where
    F: Fn(u16) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = Duration::from_secs(30);
    let deadline = tokio::time::Instant::now() + waited;
    while tokio::time::Instant::now() < deadline {
        if answers(port).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(StackError::NotReady {
        service,
        port,
        waited,
        log: log.display().to_string(),
    })
}

async fn redis_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").await.is_ok()
        && stream.read_exact(&mut reply).await.is_ok()
        && &reply == b"+PONG\r\n"
}

async fn moto_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let request = "GET /moto-api/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    let mut head = [0u8; 12];
    stream.write_all(request.as_bytes()).await.is_ok()
        && stream.read_exact(&mut head).await.is_ok()
        && head.starts_with(b"HTTP/1.")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn resolve(explicit: Option<&str>, env: &[(&str, &str)]) -> Option<PathBuf> {
        let env: HashMap<String, OsString> = env
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        CacheDir::resolve_with(explicit.map(Path::new), |name| env.get(name).cloned())
            .ok()
            .map(|dir| dir.path().to_path_buf())
    }

    #[test]
    fn the_cache_directory_is_the_flag_then_xdg_then_home() {
        let everything = [("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/ann")];
        assert_eq!(
            resolve(Some("/flag"), &everything),
            Some(PathBuf::from("/flag"))
        );
        assert_eq!(
            resolve(None, &everything),
            Some(PathBuf::from("/xdg/lineup"))
        );
        assert_eq!(
            resolve(
                None,
                &[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/ann")]
            ),
            Some(PathBuf::from("/home/ann/.cache/lineup")),
            "a relative XDG_CACHE_HOME is ignored, as the spec says"
        );
        assert_eq!(
            resolve(None, &[("XDG_CACHE_HOME", ""), ("HOME", "/home/ann")]),
            Some(PathBuf::from("/home/ann/.cache/lineup"))
        );
        assert_eq!(resolve(None, &[]), None);
        let relative = resolve(Some("cache"), &[]).unwrap();
        assert!(
            relative.is_absolute() && relative.ends_with("cache"),
            "{relative:?}"
        );
    }

    #[test]
    fn the_scripts_are_written_once_per_version_and_rewritten_if_damaged() {
        let root = std::env::temp_dir().join(format!("lineup-cache-test-{}", std::process::id()));
        let cache = CacheDir(root.clone());
        let scripts = cache.scripts().unwrap();
        assert_eq!(
            std::fs::read_to_string(&scripts.local_stack).unwrap(),
            LOCAL_STACK_SH
        );
        assert_eq!(
            std::fs::read_to_string(&scripts.moto_server).unwrap(),
            MOTO_SERVER_PY
        );
        assert!(LOCAL_STACK_SH.contains("ensure_moto()") && MOTO_SERVER_PY.contains("argparse"));
        std::fs::write(&scripts.moto_server, "damaged").unwrap();
        let again = cache.scripts().unwrap();
        assert_eq!(
            again.moto_server, scripts.moto_server,
            "same version, same place"
        );
        assert_eq!(
            std::fs::read_to_string(&again.moto_server).unwrap(),
            MOTO_SERVER_PY
        );
        let leftovers: Vec<_> = std::fs::read_dir(again.moto_server.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .filter(|name| name.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(root).unwrap();
    }
}
