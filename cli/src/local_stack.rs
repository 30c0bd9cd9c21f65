//! The local stand-ins for AWS that `lineup dev` runs: a private, memory-only redis-server (for
//! ElastiCache) and the serialised moto server (DynamoDB, DynamoDB Streams, SQS); with
//! `--payments stripe`, localstripe too (for Stripe, [`StackServices::stripe`]). What is missing
//! is installed by the same shell functions the test command uses (`scripts/local-stack.sh`);
//! the processes are this one's children, stopped when it stops. Either service may instead be
//! one already running ([`Service::Running`]: a LocalStack, a moto, a Redis, a tunnel), which is
//! used as it is and left running.
//!
//! The installer and the launchers (`scripts/moto_server.py`, `scripts/localstripe_server.py`) are
//! compiled into the binary and written to a cache directory ([`CacheDir`]) before use, so a
//! `lineup` copied anywhere, or installed with `cargo install --path cli`, runs without the source
//! tree and from any working directory. The same directory keeps the venvs (moto's; localstripe's,
//! at the version the installer pins) and the services' logs: installed once, reused by every
//! later run (and by every checkout, which share one venv instead of one each).
//!
//! Redis may be replaced while `lineup dev` runs: killed, and a new, empty server started on the
//! same port by someone else (`lineup simulate --chaos restart@..`, or a person acting out a
//! failover). The stack watches its port and carries on with whatever Redis answers there, says
//! so, and stops that one too when it stops ([`LocalStack::stop`]).

pub mod redis_server;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// The installer's shell functions (`ensure_redis_server`, `ensure_moto`,
/// `ensure_localstripe`), as built.
const LOCAL_STACK_SH: &str = include_str!("../../scripts/local-stack.sh");
/// moto with DynamoDB requests serialised, as built.
const MOTO_SERVER_PY: &str = include_str!("../../scripts/moto_server.py");
/// localstripe on 127.0.0.1 only, its store in memory (every run starts empty), as built.
const LOCALSTRIPE_SERVER_PY: &str = include_str!("../../scripts/localstripe_server.py");

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

/// Where `lineup dev` keeps what outlives a run: the moto venv (`venv/`), localstripe's
/// (`localstripe/`, the installer's `ensure_localstripe` makes it there), the compiled-in helper
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

    /// The Python of localstripe's own venv (its unpinned dependencies kept apart from moto's).
    fn localstripe_python(&self) -> PathBuf {
        self.0.join("localstripe/bin/python")
    }

    /// Writes the compiled-in scripts (if this version of them is not there yet) and says where.
    fn scripts(&self) -> Result<Scripts, StackError> {
        let mut digest = Sha256::new();
        for text in [LOCAL_STACK_SH, MOTO_SERVER_PY, LOCALSTRIPE_SERVER_PY] {
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
            localstripe_server: write_if_changed(
                &dir.join("localstripe_server.py"),
                LOCALSTRIPE_SERVER_PY,
            )?,
        })
    }
}

/// The helper scripts as written to the cache.
struct Scripts {
    local_stack: PathBuf,
    moto_server: PathBuf,
    localstripe_server: PathBuf,
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

/// The running services. Dropping it kills those it started; [`LocalStack::stop`] also waits
/// for them, and stops a Redis that took over the port. Services that were already running
/// ([`Service::Running`]) are used and left running.
pub struct LocalStack {
    children: Vec<(&'static str, Child)>,
    /// The redis-server it started, watched (see [`RedisKeeper`]).
    redis: Option<RedisKeeper>,
    /// The port of the Redis it started, if it started one.
    redis_port: Option<u16>,
    pub redis_url: String,
    pub aws_endpoint_url: String,
    /// localstripe's API base (`http://127.0.0.1:<port>`), if it started one.
    pub stripe_api_url: Option<String>,
}

/// Where a service comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    /// Started here, on this port of 127.0.0.1, and stopped with the stack.
    Start(u16),
    /// Already running at this URL (a LocalStack, a moto, a Redis, an ElastiCache tunnel):
    /// used as it is, and left running.
    Running(String),
}

impl Service {
    fn port_to_start(&self) -> Option<u16> {
        match self {
            Self::Start(port) => Some(*port),
            Self::Running(_) => None,
        }
    }

    /// Who stops it, for the messages: "started here" or "left running".
    pub fn describe(&self, what: &str) -> String {
        match self {
            Self::Start(port) => format!("{what} on :{port}"),
            Self::Running(url) => format!("the {what} at {url}"),
        }
    }
}

/// The stack's services: Redis (for ElastiCache) and DynamoDB/SQS/Secrets Manager (moto
/// when started here); and, if asked for, localstripe (for Stripe).
pub struct StackServices {
    pub redis: Service,
    pub aws: Service,
    /// localstripe, started here on this port of 127.0.0.1 (`lineup dev --payments stripe`) and
    /// stopped with the stack; `None`: no Stripe stand-in.
    pub stripe: Option<u16>,
}

impl LocalStack {
    /// Installs what is missing for the services to start (Debian's redis-server; a venv with
    /// moto in the cache directory; one with localstripe), then starts them and waits until they
    /// answer.
    pub async fn start(cache: &CacheDir, services: &StackServices) -> Result<Self, StackError> {
        let local_dir = cache.path();
        std::fs::create_dir_all(local_dir)
            .map_err(|source| StackError::Directory(local_dir.to_path_buf(), source))?;
        let redis_port = services.redis.port_to_start();
        let moto_port = services.aws.port_to_start();
        let stripe_port = services.stripe;
        for port in redis_port.into_iter().chain(moto_port).chain(stripe_port) {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Err(StackError::PortTaken(port));
            }
        }
        let mut stack = Self {
            children: Vec::new(),
            redis: None,
            redis_port,
            redis_url: match &services.redis {
                Service::Start(port) => format!("redis://127.0.0.1:{port}"),
                Service::Running(url) => url.clone(),
            },
            aws_endpoint_url: match &services.aws {
                Service::Start(port) => format!("http://127.0.0.1:{port}"),
                Service::Running(url) => url.clone(),
            },
            stripe_api_url: None,
        };
        // The installer's functions for what starts here, each a no-op once installed.
        let installs: Vec<&str> = [
            redis_port.map(|_| "ensure_redis_server"),
            moto_port.map(|_| "ensure_moto"),
            stripe_port.map(|_| "ensure_localstripe"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if installs.is_empty() {
            return Ok(stack);
        }
        let scripts = cache.scripts()?;
        install(cache, &scripts.local_stack, &installs).await?;

        if let Some(port) = redis_port {
            let redis_log = local_dir.join(format!("dev-redis-{port}.log"));
            // Dropped (killed) if it never answers.
            let redis = Command::new("redis-server")
                .args(redis_server::server_args(
                    port,
                    redis_server::LOOPBACK,
                    &redis_log,
                ))
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|source| StackError::Spawn {
                    program: "redis-server",
                    source,
                })?;
            wait_until("redis-server", port, &redis_log, redis_server::answers).await?;
            stack.redis = Some(RedisKeeper::start(redis, port));
        }

        if let Some(port) = moto_port {
            let moto_log = local_dir.join(format!("dev-moto-{port}.log"));
            let (log_file, log_copy) = log_files(&moto_log)?;
            let moto = Command::new(cache.venv_python())
                .arg(&scripts.moto_server)
                .args(["--port", &port.to_string()])
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
            wait_until("moto", port, &moto_log, moto_answers).await?;
        }

        if let Some(port) = stripe_port {
            let stripe_log = local_dir.join(format!("dev-localstripe-{port}.log"));
            let (stdout, stderr) = log_files(&stripe_log)?;
            // Bound to 127.0.0.1 by the launcher (localstripe alone binds every interface), its
            // store in memory: each run starts from scratch, as `--from-scratch` and more.
            let localstripe = Command::new(cache.localstripe_python())
                .arg(&scripts.localstripe_server)
                .args(["--port", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .kill_on_drop(true)
                .spawn()
                .map_err(|source| StackError::Spawn {
                    program: "localstripe (localstripe_server.py in the cache directory's venv)",
                    source,
                })?;
            stack.children.push(("localstripe", localstripe));
            wait_until("localstripe", port, &stripe_log, localstripe_answers).await?;
            stack.stripe_api_url = Some(format!("http://127.0.0.1:{port}"));
        }
        Ok(stack)
    }

    /// Stops every process it started and waits for each to exit; then a Redis that took over
    /// its port, if it started one and another did. Services it did not start go on running.
    pub async fn stop(mut self) {
        if let Some(redis) = self.redis.take() {
            redis.stop().await;
        }
        for (name, child) in &mut self.children {
            if let Err(error) = child.kill().await {
                tracing::warn!(service = *name, error = %error, "could not stop");
            }
        }
        self.children.clear();
        if let Some(port) = self.redis_port {
            stop_replacement(port).await;
        }
    }
}

/// Stops whatever Redis still answers on `lineup dev`'s Redis port once its own is stopped: one
/// that replaced it (`lineup simulate --chaos restart@..` starts it detached, so that it outlives
/// the simulation and goes on serving this dev server; or a person did). The port was free when
/// `lineup dev` started (it refuses a taken one) and is its `--redis-port`, so a Redis answering
/// there now took over from the one it started: it is part of the stack, and Ctrl-C stopping
/// "everything" stops it too. `SHUTDOWN NOSAVE` first (it keeps nothing anyway), then `SIGKILL`
/// to the process id it gave if it is still there.
async fn stop_replacement(port: u16) {
    if !redis_server::answers(port).await {
        return;
    }
    let pid = redis_server::inspect(port)
        .await
        .ok()
        .map(|found| found.pid);
    eprintln!(
        "lineup dev: stopping the Redis that took over :{port}{}",
        pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    );
    if let Err(error) = redis_server::shutdown(port).await {
        tracing::warn!(port, error = %error, "could not send SHUTDOWN NOSAVE");
    }
    if redis_server::wait_until_closed(port, Duration::from_secs(5)).await {
        return;
    }
    if let Some(pid) = pid {
        if let Err(error) = redis_server::kill(pid).await {
            tracing::warn!(port, pid, error = %error, "could not kill the Redis");
        }
        if redis_server::wait_until_closed(port, Duration::from_secs(2)).await {
            return;
        }
    }
    tracing::warn!(
        port,
        "a Redis still answers on the port after SHUTDOWN NOSAVE and SIGKILL"
    );
}

/// The redis-server `lineup dev` started, watched until the stack stops: when it exits (killed,
/// as a failed node is) the dev server serves on (what needs Redis answers 503, every Redis
/// connection reconnects on its own), and when a Redis answers on the port again (a new, empty
/// one: a failover) it carries on with it. Both are said on stderr. Dropping it kills the child.
struct RedisKeeper {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

/// How often the keeper knocks on the Redis port.
const REDIS_WATCH_EVERY: Duration = Duration::from_millis(500);

impl RedisKeeper {
    fn start(child: Child, port: u16) -> Self {
        let (stop, stopped) = oneshot::channel();
        Self {
            stop: Some(stop),
            task: tokio::spawn(keep_redis(child, port, stopped)),
        }
    }

    /// Stops its redis-server (if still running) and waits for it to exit.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for RedisKeeper {
    fn drop(&mut self) {
        // Drops the child with the task: `kill_on_drop` kills it.
        self.task.abort();
    }
}

async fn keep_redis(child: Child, port: u16, mut stopped: oneshot::Receiver<()>) {
    // Which Redis answers on the port, by process id (`None`: none does). Knocked on every
    // tick: a failover can be over well within one, so a new process id is a replacement too.
    let mut answering = child.id();
    let mut child = Some(child);
    // The loss was said already (the child's exit), so the port going quiet is not said again.
    let mut loss_said = false;
    let mut every = tokio::time::interval(REDIS_WATCH_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            exit = exit_of(&mut child) => {
                child = None;
                loss_said = true;
                eprintln!(
                    "lineup dev: the redis-server it started on :{port} exited ({exit}); serving \
                     on: what needs Redis answers 503 until a Redis answers on :{port} again"
                );
            }
            _ = every.tick() => {
                let now = redis_server::process_id(port).await;
                match (answering, now) {
                    (Some(_), None) if !loss_said => eprintln!(
                        "lineup dev: no Redis answers on :{port} any more; serving on: what needs \
                         Redis answers 503 until one answers there again"
                    ),
                    (before, Some(pid)) if before != Some(pid) => {
                        loss_said = false;
                        let replaced = before
                            .map(|before| format!(" in place of pid {before}"))
                            .unwrap_or_default();
                        eprintln!(
                            "lineup dev: a new Redis answers on :{port} (pid {pid}{replaced}): \
                             carrying on with it (what the old one held is gone, as after a \
                             failover; Ctrl-C stops this one too)"
                        );
                    }
                    _ => {}
                }
                answering = now;
            }
        }
    }
    if let Some(mut child) = child {
        if let Err(error) = child.kill().await {
            tracing::warn!(service = "redis-server", error = %error, "could not stop");
        }
    }
}

/// How the child exited, once it has; never, without one.
async fn exit_of(child: &mut Option<Child>) -> String {
    match child {
        Some(child) => match child.wait().await {
            Ok(status) => status.to_string(),
            Err(error) => format!("could not tell how: {error}"),
        },
        None => std::future::pending().await,
    }
}

/// A service's log file, for its stdout and its stderr both.
fn log_files(log: &Path) -> Result<(std::fs::File, std::fs::File), StackError> {
    let file = std::fs::File::create(log)
        .map_err(|source| StackError::Directory(log.to_path_buf(), source))?;
    let copy = file
        .try_clone()
        .map_err(|source| StackError::Directory(log.to_path_buf(), source))?;
    Ok((file, copy))
}

/// The installer's `ensure_*` functions named (`ensure_redis_server`, `ensure_moto`,
/// `ensure_localstripe`: constant names, never user input), from the written installer, with the
/// cache directory as its `LOCAL_DIR` (where `ensure_moto` and `ensure_localstripe` keep the
/// venvs they reuse, at the versions the installer pins).
async fn install(cache: &CacheDir, script: &Path, functions: &[&str]) -> Result<(), StackError> {
    let status = Command::new("bash")
        .arg("-c")
        .arg(format!(
            r#"set -euo pipefail; source "$1"; {}"#,
            functions.join("; ")
        ))
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

/// localstripe's Stripe.js stand-in answers 200: the one GET that needs no key and changes
/// nothing (as `start_localstripe` in the installer waits for it).
async fn localstripe_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let request = "GET /js.stripe.com/v3/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    let mut head = [0u8; 12];
    stream.write_all(request.as_bytes()).await.is_ok()
        && stream.read_exact(&mut head).await.is_ok()
        && head.starts_with(b"HTTP/1.")
        && head.ends_with(b"200")
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
        assert!(
            LOCAL_STACK_SH.contains("ensure_localstripe()")
                && LOCALSTRIPE_SERVER_PY.contains("keep_store_in_memory"),
            "the installer and launcher `lineup dev --payments stripe` runs"
        );
        assert_eq!(
            std::fs::read_to_string(&scripts.localstripe_server).unwrap(),
            LOCALSTRIPE_SERVER_PY
        );
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
