//! A private, throw-away `redis-server` for tests that stop Redis on purpose.
//!
//! The tests share one process (and the machine other runs), so a port is never assumed to be
//! free: each server takes a port no other server of this process holds, even while stopped
//! (a restart comes back on the same port), and a server only counts as started once the one
//! answering on its port is this child process (`INFO server`'s `process_id`), not whatever
//! else took the port meanwhile.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The ports held by this process's servers, running or stopped.
static HELD_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    /// For a node of a cluster: the directory of its `nodes.conf` (kept across restarts, so a
    /// restarted node takes its slots back, empty, as a node replaced after a failure does).
    cluster_dir: Option<std::path::PathBuf>,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port and waits until it answers.
    pub fn start() -> Self {
        let started = Instant::now();
        loop {
            let port = Self::free_port();
            let mut server = Self {
                port,
                child: None,
                cluster_dir: None,
            };
            match server.try_start() {
                Ok(()) => return server,
                // Someone outside this process took the port between the check and the start:
                // try another one.
                Err(why) if started.elapsed() < Duration::from_secs(30) => {
                    eprintln!("redis-server on {port}: {why}; trying another port");
                }
                Err(why) => panic!("redis-server did not start: {why}"),
            }
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// (Re)starts the server on the same port.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        if let Err(why) = self.try_start() {
            panic!("redis-server did not restart on {}: {why}", self.port);
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A loopback port that is free now and not held by another server of this process.
    fn free_port() -> u16 {
        let mut held = HELD_PORTS.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            if held.insert(port) {
                return port;
            }
        }
    }

    fn try_start(&mut self) -> Result<(), String> {
        let mut command = Command::new("redis-server");
        command.args([
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]);
        if let Some(dir) = &self.cluster_dir {
            command
                .args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(dir.join("nodes.conf"))
                .arg("--dir")
                .arg(dir);
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (the README's test command installs it)");
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("it exited ({status}): the port is taken"));
            }
            match server_pid(self.port) {
                Some(pid) if pid == child.id() => {
                    self.child = Some(child);
                    return Ok(());
                }
                Some(other) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("another redis-server (pid {other}) answers there"));
                }
                None if started.elapsed() > Duration::from_secs(10) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("it did not answer within 10 s".to_owned());
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// The `process_id` of the Redis answering on `port`, if one does.
fn server_pid(port: u16) -> Option<u32> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        .ok()?;
    let mut reply = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !reply.windows(11).any(|w| w == b"process_id:") || !reply.ends_with(b"\r\n") {
        let read = stream.read(&mut buffer).ok()?;
        if read == 0 {
            return None;
        }
        reply.extend_from_slice(&buffer[..read]);
    }
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        HELD_PORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.port);
    }
}

/// A private three-node Redis Cluster (no replicas), for a test that fails a node over to an
/// empty one: each node keeps its `nodes.conf`, so a restarted node rejoins with its slots and
/// none of its data.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    dir: std::path::PathBuf,
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl RedisCluster {
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("lineup-cluster-{}", uuid::Uuid::new_v4()));
        let mut nodes = Vec::new();
        for n in 0..3 {
            let node_dir = dir.join(format!("node-{n}"));
            std::fs::create_dir_all(&node_dir).expect("node directory");
            let started = Instant::now();
            loop {
                let mut node = RedisServer {
                    port: RedisServer::free_port(),
                    child: None,
                    cluster_dir: Some(node_dir.clone()),
                };
                match node.try_start() {
                    Ok(()) => {
                        nodes.push(node);
                        break;
                    }
                    Err(why) if started.elapsed() < Duration::from_secs(30) => {
                        eprintln!("cluster node: {why}; trying another port");
                    }
                    Err(why) => panic!("a cluster node did not start: {why}"),
                }
            }
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli is installed with redis-server");
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = Self { nodes, dir };
        cluster.wait_until_ok();
        cluster
    }

    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// Waits until every node says the cluster is ok (after creating it, or a node's restart).
    pub fn wait_until_ok(&self) {
        let started = Instant::now();
        for node in &self.nodes {
            loop {
                let info = Command::new("redis-cli")
                    .args(["-p", &node.port.to_string(), "cluster", "info"])
                    .output()
                    .expect("redis-cli");
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the cluster did not become ok"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The node serving `key`'s slot.
    pub fn node_of(&mut self, key: &str) -> &mut RedisServer {
        let slot = Command::new("redis-cli")
            .args([
                "-p",
                &self.nodes[0].port.to_string(),
                "cluster",
                "keyslot",
                key,
            ])
            .output()
            .expect("redis-cli");
        let slot: u16 = String::from_utf8_lossy(&slot.stdout)
            .trim()
            .parse()
            .expect("a slot");
        let shards = Command::new("redis-cli")
            .args(["-p", &self.nodes[0].port.to_string(), "cluster", "slots"])
            .output()
            .expect("redis-cli");
        // Lines: start, end, ip, port, id, (replicas...), repeated per range.
        let lines: Vec<String> = String::from_utf8_lossy(&shards.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let mut port = None;
        let mut i = 0;
        while i + 3 < lines.len() {
            if let (Ok(start), Ok(end)) = (lines[i].parse::<u16>(), lines[i + 1].parse::<u16>()) {
                if (start..=end).contains(&slot) {
                    port = lines[i + 3].parse::<u16>().ok();
                    break;
                }
                i += 5;
            } else {
                i += 1;
            }
        }
        let port = port.expect("the slot's node");
        self.nodes
            .iter_mut()
            .find(|node| node.port == port)
            .expect("one of this cluster's nodes")
    }
}
