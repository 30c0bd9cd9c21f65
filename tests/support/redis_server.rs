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
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port and waits until it answers.
    pub fn start() -> Self {
        let started = Instant::now();
        loop {
            let port = Self::free_port();
            let mut server = Self { port, child: None };
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
        let mut child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
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
