//! The local Redis as a process on this machine, found by its port on 127.0.0.1: who answers
//! there (the process id `INFO` gives, the log file and bind address it runs with), starting one
//! like it, and stopping one.
//!
//! `lineup dev` uses it to notice its Redis replaced (a failover to an empty node, acted out by
//! `lineup simulate --chaos restart@..` or by hand) and, at Ctrl-C, to stop whatever Redis took
//! over its port; `lineup simulate` uses it to act the failover out: kill the server, start an
//! empty one on the same port.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use redis::AsyncConnectionConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The only address the local Redis listens on.
pub const LOOPBACK: &str = "127.0.0.1";
/// Bound on connecting to the local Redis and on each of its replies.
const TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum RedisServerError {
    #[error("could not ask the Redis on {LOOPBACK}:{port} who it is")]
    Ask {
        port: u16,
        #[source]
        source: redis::RedisError,
    },
    #[error("the Redis on {LOOPBACK}:{port} did not say its process id (INFO server)")]
    NoProcessId { port: u16 },
    #[error("could not run `{program}`")]
    Run {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`kill -KILL {pid}` failed ({status})")]
    Kill {
        pid: u32,
        status: std::process::ExitStatus,
    },
}

/// A running redis-server, as it describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisProcess {
    pub port: u16,
    pub pid: u32,
    /// The program to start another one like it: `INFO`'s `executable` when that is a file
    /// (Redis reports its `argv[0]` joined to its working directory, which for a server started
    /// as plain `redis-server` names no file), else `redis-server` from the PATH.
    pub program: PathBuf,
    /// Its `logfile` (empty: standard output).
    pub logfile: String,
    /// Its `bind` addresses.
    pub bind: String,
    /// How many keys it holds.
    pub keys: u64,
}

/// The arguments `lineup dev` starts its Redis with, and a replacement too: memory only (no
/// snapshot, no append-only file), so a new server on the port always starts empty. `bind` is
/// one address or several, separated by spaces (as `CONFIG GET bind` gives them).
pub fn server_args(port: u16, bind: &str, logfile: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--port".into(), port.to_string().into(), "--bind".into()];
    args.extend(bind.split_whitespace().map(OsString::from));
    args.extend(["--save", "", "--appendonly", "no", "--logfile"].map(OsString::from));
    args.push(logfile.as_os_str().to_owned());
    args
}

/// Whether a Redis answers `PING` on 127.0.0.1:`port`.
pub async fn answers(port: u16) -> bool {
    let Ok(Ok(mut stream)) =
        tokio::time::timeout(TIMEOUT, TcpStream::connect((LOOPBACK, port))).await
    else {
        return false;
    };
    let mut reply = [0u8; 7];
    let exchange = async {
        stream.write_all(b"PING\r\n").await.is_ok()
            && stream.read_exact(&mut reply).await.is_ok()
            && &reply == b"+PONG\r\n"
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .unwrap_or(false)
}

/// Whether anything accepts connections on 127.0.0.1:`port`.
async fn listening(port: u16) -> bool {
    matches!(
        tokio::time::timeout(TIMEOUT, TcpStream::connect((LOOPBACK, port))).await,
        Ok(Ok(_))
    )
}

/// Waits until nothing listens on the port any more (`false`: still listening at `timeout`).
pub async fn wait_until_closed(port: u16, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if !listening(port).await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until a Redis answers on the port (`false`: none did within `timeout`).
pub async fn wait_until_answers(port: u16, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if answers(port).await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The process id of the Redis answering on 127.0.0.1:`port` (`None`: none answers, or it did
/// not say).
pub async fn process_id(port: u16) -> Option<u32> {
    let (_, info) = server_info(port).await.ok()?;
    parse_info(&info).0
}

/// A connection to the Redis on 127.0.0.1:`port` (connecting and each reply bounded by
/// [`TIMEOUT`]), and what it says in `INFO server`.
async fn server_info(
    port: u16,
) -> Result<(redis::aio::MultiplexedConnection, String), redis::RedisError> {
    let client = redis::Client::open(format!("redis://{LOOPBACK}:{port}/"))?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT));
    let mut connection = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut connection)
        .await?;
    Ok((connection, info))
}

/// Asks the Redis on 127.0.0.1:`port` who it is: `INFO server`, `CONFIG GET logfile` and
/// `bind`, `DBSIZE`.
pub async fn inspect(port: u16) -> Result<RedisProcess, RedisServerError> {
    let ask = |source| RedisServerError::Ask { port, source };
    let (mut connection, info) = server_info(port).await.map_err(ask)?;
    let config_value = |pairs: Vec<String>| pairs.into_iter().nth(1).unwrap_or_default();
    let logfile: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("logfile")
        .query_async(&mut connection)
        .await
        .map_err(ask)?;
    let bind: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bind")
        .query_async(&mut connection)
        .await
        .map_err(ask)?;
    let keys: u64 = redis::cmd("DBSIZE")
        .query_async(&mut connection)
        .await
        .map_err(ask)?;
    let (pid, executable) = parse_info(&info);
    Ok(RedisProcess {
        port,
        pid: pid.ok_or(RedisServerError::NoProcessId { port })?,
        program: executable
            .filter(|path| path.is_file())
            .unwrap_or_else(|| PathBuf::from("redis-server")),
        logfile: config_value(logfile),
        bind: Some(config_value(bind))
            .filter(|bind| !bind.trim().is_empty())
            .unwrap_or_else(|| LOOPBACK.to_owned()),
        keys,
    })
}

/// `process_id` and `executable` of an `INFO server` answer.
fn parse_info(info: &str) -> (Option<u32>, Option<PathBuf>) {
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_owned)
    };
    (
        field("process_id").and_then(|pid| pid.parse().ok()),
        field("executable")
            .filter(|path| !path.is_empty())
            .map(PathBuf::from),
    )
}

/// Sends `SHUTDOWN NOSAVE` to the Redis on the port (it closes the connection on success).
pub async fn shutdown(port: u16) -> std::io::Result<()> {
    let mut stream = tokio::time::timeout(TIMEOUT, TcpStream::connect((LOOPBACK, port)))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    stream.write_all(b"SHUTDOWN NOSAVE\r\n").await?;
    let mut reply = Vec::new();
    // Read until it hangs up (or a reply comes, for a server that refuses).
    let _ = tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut reply)).await;
    Ok(())
}

/// Kills the process outright (`SIGKILL`), as a node dies in a failover.
pub async fn kill(pid: u32) -> Result<(), RedisServerError> {
    let status = tokio::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stdin(Stdio::null())
        .status()
        .await
        .map_err(|source| RedisServerError::Run {
            program: "kill".to_owned(),
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(RedisServerError::Kill { pid, status })
    }
}

/// Starts `program args` in a process group of its own, detached from whoever starts it: it
/// outlives the caller, and a Ctrl-C in the caller's terminal does not reach it. Returns its
/// process id. (Nobody waits for it here: the dev server whose port it serves stops it.)
pub fn spawn_detached(program: &Path, args: &[OsString]) -> Result<u32, RedisServerError> {
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| RedisServerError::Run {
            program: program.display().to_string(),
            source,
        })?;
    Ok(child.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_gives_the_process_id_and_the_executable() {
        let info =
            "# Server\r\nredis_version:7.0.15\r\nprocess_id:9204\r\nprocess_supervised:no\r\n\
                    executable:/usr/bin/redis-server\r\nconfig_file:\r\n";
        assert_eq!(
            parse_info(info),
            (Some(9204), Some(PathBuf::from("/usr/bin/redis-server")))
        );
        assert_eq!(parse_info("# Server\r\nexecutable:\r\n"), (None, None));
        // `process_id_x` is another field.
        assert_eq!(parse_info("process_id_x:1\r\n").0, None);
    }

    #[test]
    fn several_bind_addresses_are_several_arguments() {
        let args = server_args(1, "127.0.0.1 -::1", Path::new(""));
        assert_eq!(
            &args[3..5],
            [OsString::from("127.0.0.1"), OsString::from("-::1")]
        );
    }

    #[test]
    fn a_server_is_started_memory_only() {
        let args = server_args(6481, "127.0.0.1", Path::new("/tmp/redis.log"));
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "--port",
                "6481",
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                "/tmp/redis.log"
            ]
        );
    }
}
