//! The local stand-ins for AWS that `lineup dev` runs: a private, memory-only redis-server (for
//! ElastiCache) and the serialised moto server (DynamoDB, DynamoDB Streams, SQS). What is missing
//! is installed by the same shell functions the test command uses (`scripts/local-stack.sh`);
//! the processes are this one's children, stopped when it stops.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("installing the local services failed (scripts/local-stack.sh exited with {0})")]
    Install(std::process::ExitStatus),
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
    /// Installs what is missing (Debian's redis-server; a venv with moto under `.local/`), then
    /// starts both and waits until they answer.
    pub async fn start(repo: &Path, ports: &StackPorts) -> Result<Self, StackError> {
        let local_dir = repo.join(".local");
        std::fs::create_dir_all(&local_dir)
            .map_err(|source| StackError::Directory(local_dir.clone(), source))?;
        for port in [ports.redis, ports.moto] {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Err(StackError::PortTaken(port));
            }
        }
        install(repo).await?;

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
        let moto = Command::new(local_dir.join("venv/bin/python"))
            .arg(repo.join("scripts/moto_server.py"))
            .args(["--port", &ports.moto.to_string()])
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_copy)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| StackError::Spawn {
                program: "moto (scripts/moto_server.py)",
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

async fn install(repo: &Path) -> Result<(), StackError> {
    let status = Command::new("bash")
        .arg("-c")
        .arg("set -euo pipefail; source scripts/local-stack.sh; ensure_redis_server; ensure_moto")
        .current_dir(repo)
        .status()
        .await
        .map_err(|source| StackError::Spawn {
            program: "bash",
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(StackError::Install(status))
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
