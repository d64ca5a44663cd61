//! A log file rotated by size: `daemon-KEY.log` grows to [`Rotating::max_bytes`], then becomes
//! `daemon-KEY.log.1` (the older ones shift to `.2` … `.KEEP`, the oldest is dropped) and a new
//! file starts. Hand-written (60 lines) rather than `tracing-appender`'s `rolling`: that one
//! rotates by time only (minutely, hourly, daily), so a quiet daemon would keep hundreds of
//! empty files and a chatty one (`THINKTERM_LOG=debug`) a file of any size; what we want is a
//! bound on the disk used, whatever the rate.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Default size at which the file is rotated.
pub const MAX_BYTES: u64 = 1024 * 1024;
/// Default number of rotated files kept besides the current one.
pub const KEEP: usize = 3;

/// An append-only file that rotates itself by size.
#[derive(Debug)]
pub struct Rotating {
    path: PathBuf,
    file: File,
    size: u64,
    /// Rotate before a write that would take the file past this size.
    pub max_bytes: u64,
    /// Rotated files kept (`.1` … `.KEEP`).
    pub keep: usize,
}

impl Rotating {
    /// Opens (creating its directory and the file) `path` for appending.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<Rotating> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(Rotating {
            path: path.to_path_buf(),
            file,
            size,
            max_bytes,
            keep,
        })
    }

    /// The file written now.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn rotate(&mut self) -> io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        if self.keep == 0 {
            std::fs::remove_file(&self.path).or_else(ignore_missing)?;
        } else {
            for n in (1..self.keep).rev() {
                std::fs::rename(numbered(n), numbered(n + 1)).or_else(ignore_missing)?;
            }
            std::fs::rename(&self.path, numbered(1)).or_else(ignore_missing)?;
        }
        self.file = open_append(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn ignore_missing(e: io::Error) -> io::Result<()> {
    if e.kind() == io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}

impl Write for Rotating {
    /// One call per log line (tracing's formatter writes each event at once), so a line is never
    /// split across two files.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_the_newest_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs/daemon-x.log");
        let mut r = Rotating::open(&path, 100, 2).expect("open");
        for i in 0..10 {
            // 40 bytes a line: two lines fit, the third rotates.
            r.write_all(format!("{i:039}\n").as_bytes()).expect("write");
        }
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).expect(p);
        assert_eq!(read("logs/daemon-x.log"), format!("{:039}\n{:039}\n", 8, 9));
        assert_eq!(
            read("logs/daemon-x.log.1"),
            format!("{:039}\n{:039}\n", 6, 7)
        );
        assert_eq!(
            read("logs/daemon-x.log.2"),
            format!("{:039}\n{:039}\n", 4, 5)
        );
        assert!(!dir.path().join("logs/daemon-x.log.3").exists());

        // Reopened, it counts what the file already holds.
        drop(r);
        let mut again = Rotating::open(&path, 100, 2).expect("reopen");
        again.write_all(&[b'y'; 30]).expect("write");
        assert_eq!(
            read("logs/daemon-x.log.1"),
            format!("{:039}\n{:039}\n", 8, 9)
        );
    }

    #[test]
    fn a_line_longer_than_the_cap_is_written_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.log");
        let mut r = Rotating::open(&path, 10, 0).expect("open");
        r.write_all(b"a long line of text\n").expect("write");
        r.write_all(b"next\n").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "next\n");
    }
}
