//! [`LineSniffer`]: reading whole lines off a stream before a connection starts on it, for
//! dialect detection and version negotiation. The connection then gets the stream back with
//! everything the sniffer read but did not consume.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads lines off `reader` one at a time, each bounded by a maximum size, and hands the
/// reader back (with any bytes read past the last consumed line) through
/// [`LineSniffer::into_reader`].
///
/// ```
/// use acp_rpc::sniff::LineSniffer;
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut sniffer = LineSniffer::new(&b"{\"id\":0}\nrest"[..], 1024);
/// assert_eq!(sniffer.next_line().await.unwrap().as_deref(), Some(&b"{\"id\":0}"[..]));
/// let mut rest = String::new();
/// sniffer.into_reader().read_to_string(&mut rest).await.unwrap();
/// assert_eq!(rest, "rest");
/// # }
/// ```
#[derive(Debug)]
pub struct LineSniffer<R> {
    reader: R,
    /// Bytes read but not consumed yet.
    buffered: Vec<u8>,
    max_line: usize,
    eof: bool,
}

/// What [`LineSniffer::next_line`] found instead of a line.
#[derive(Debug, thiserror::Error)]
pub enum SniffError {
    /// A line longer than the maximum: nothing was consumed (the connection will reject it).
    #[error("the first line is longer than {0} bytes")]
    TooLong(usize),
    /// Reading failed.
    #[error("reading the first line failed: {0}")]
    Io(#[from] io::Error),
}

impl<R: AsyncRead + Unpin> LineSniffer<R> {
    /// A sniffer over `reader` accepting lines of at most `max_line` bytes.
    pub fn new(reader: R, max_line: usize) -> Self {
        LineSniffer {
            reader,
            buffered: Vec::new(),
            max_line,
            eof: false,
        }
    }

    /// The next line without its line end (`\n` or `\r\n`), skipping blank lines; `None` at
    /// the end of the stream (a last line without `\n` is returned as a line). A line over
    /// the maximum is an error and stays unconsumed.
    pub async fn next_line(&mut self) -> Result<Option<Vec<u8>>, SniffError> {
        let mut scanned = 0;
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buffered[scanned..]) {
                let end = scanned + pos;
                let mut line: Vec<u8> = self.buffered.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    scanned = 0;
                    continue;
                }
                return Ok(Some(line));
            }
            scanned = self.buffered.len();
            if scanned > self.max_line {
                return Err(SniffError::TooLong(self.max_line));
            }
            if self.eof {
                if self.buffered.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                return Ok(Some(std::mem::take(&mut self.buffered)));
            }
            let mut chunk = [0u8; 8192];
            let n = self.reader.read(&mut chunk).await?;
            if n == 0 {
                self.eof = true;
            }
            self.buffered.extend_from_slice(&chunk[..n]);
        }
    }

    /// Puts `line` back in front of what is buffered, so the connection reads it first.
    pub fn unread(&mut self, line: &[u8]) {
        let mut restored = Vec::with_capacity(line.len() + 1 + self.buffered.len());
        restored.extend_from_slice(line);
        restored.push(b'\n');
        restored.extend_from_slice(&self.buffered);
        self.buffered = restored;
    }

    /// The reader, with the unconsumed bytes in front.
    pub fn into_reader(self) -> tokio::io::Chain<io::Cursor<Vec<u8>>, R> {
        io::Cursor::new(self.buffered).chain(self.reader)
    }
}
