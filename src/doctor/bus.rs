//! The session bus and the notification server, as the daemon would reach them: the bus at the
//! daemon's `DBUS_SESSION_BUS_ADDRESS` (or this shell's, or zbus's default
//! `$XDG_RUNTIME_DIR/bus`), then `org.freedesktop.Notifications`' `GetServerInformation`
//! (name, vendor, version, spec) and `GetCapabilities` (is `actions` there: can a click bring
//! the pane to the front?). Every call has a time limit.

use std::time::Duration;

use serde::Serialize;

/// The longest wait for the bus or the server.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// The notification server's answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// Its name (`dunst`, `gnome-shell`).
    pub name: String,
    /// Its vendor.
    pub vendor: String,
    /// Its version.
    pub version: String,
    /// The specification version it implements.
    pub spec_version: String,
    /// `GetCapabilities`.
    pub capabilities: Vec<String>,
}

/// What was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusFacts {
    /// No bus could be reached (why).
    NoBus(String),
    /// The bus answers; nobody owns `org.freedesktop.Notifications` or it failed (why).
    NoServer {
        /// The bus address tried (None: zbus's default).
        address: Option<String>,
        /// Why.
        why: String,
    },
    /// The bus and the notification server answer.
    Server {
        /// The bus address tried (None: zbus's default).
        address: Option<String>,
        /// The server.
        info: ServerInfo,
    },
}

/// Connects to the bus at `address` (None: the session bus as zbus finds it) and asks the
/// notification server who it is and what it can do.
pub async fn probe(address: Option<String>) -> BusFacts {
    let conn = async {
        match &address {
            Some(a) => {
                zbus::connection::Builder::address(a.as_str())?
                    .build()
                    .await
            }
            None => zbus::Connection::session().await,
        }
    };
    let conn = match tokio::time::timeout(TIMEOUT, conn).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return BusFacts::NoBus(e.to_string()),
        Err(_) => return BusFacts::NoBus(format!("no answer within {TIMEOUT:?}")),
    };
    let ask = async {
        let call = |method: &'static str| {
            conn.call_method(
                Some("org.freedesktop.Notifications"),
                "/org/freedesktop/Notifications",
                Some("org.freedesktop.Notifications"),
                method,
                &(),
            )
        };
        let (name, vendor, version, spec_version): (String, String, String, String) =
            call("GetServerInformation").await?.body().deserialize()?;
        let capabilities: Vec<String> = call("GetCapabilities").await?.body().deserialize()?;
        Ok::<_, zbus::Error>(ServerInfo {
            name,
            vendor,
            version,
            spec_version,
            capabilities,
        })
    };
    match tokio::time::timeout(TIMEOUT, ask).await {
        Ok(Ok(info)) => BusFacts::Server { address, info },
        Ok(Err(e)) => BusFacts::NoServer {
            address,
            why: e.to_string(),
        },
        Err(_) => BusFacts::NoServer {
            address,
            why: format!("the notification server did not answer within {TIMEOUT:?}"),
        },
    }
}
