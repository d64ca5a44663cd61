//! A private `sshd` on 127.0.0.1 at a free port, with a throwaway host key and a key pair whose
//! public half is the only authorized one; killed by pid on drop. Needs Debian's
//! `openssh-server` (`/usr/sbin/sshd`), which `.ci/run` installs.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::wait_for;

/// A running sshd.
pub struct Sshd {
    child: Option<Child>,
    /// The port it listens on.
    pub port: u16,
    /// The client's private key.
    pub key: PathBuf,
    config: PathBuf,
    dir: tempfile::TempDir,
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen runs")
        .success();
    assert!(ok, "ssh-keygen failed");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Sshd {
    /// Starts one and waits until it accepts connections.
    pub fn start() -> Sshd {
        let dir = tempfile::tempdir().expect("tempdir");
        let host = dir.path().join("host_key");
        let key = dir.path().join("id");
        keygen(&host);
        keygen(&key);
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(key.with_extension("pub"), &authorized).expect("authorized key");
        // The sessions' shell reads its rc files from this empty home, not from the machine's
        // user's: a root ~/.bashrc running `pyenv init` waited on a lock left by a killed
        // session and held every ssh command for a minute (all the suite's links timed out).
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        // Privilege separation wants this folder.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PidFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
                 LogLevel ERROR\nClientAliveInterval 5\nSetEnv HOME={}\n",
                host.display(),
                authorized.display(),
                dir.path().join("sshd.pid").display(),
                home.display()
            ),
        )
        .expect("config");
        let mut s = Sshd {
            child: None,
            port,
            key,
            config,
            dir,
        };
        s.run();
        s
    }

    fn run(&mut self) {
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts (apt-get install openssh-server)");
        self.child = Some(child);
        let port = self.port;
        wait_for(10, "sshd accepts connections", || {
            TcpStream::connect_timeout(
                &format!("127.0.0.1:{port}").parse().expect("address"),
                Duration::from_millis(200),
            )
            .ok()
        });
    }

    /// Kills it (and every connection it serves: their processes are its children).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("pkill")
                .args(["-KILL", "-P", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.run();
    }

    /// The ssh arguments that reach it as root (before the destination).
    pub fn ssh_args(&self) -> Vec<String> {
        [
            "-i",
            &self.key.display().to_string(),
            "-p",
            &self.port.to_string(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
        ]
        .map(String::from)
        .to_vec()
    }

    /// A folder of its own, for the test's files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}
