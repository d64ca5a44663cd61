//! How a machine is named and reached: a `[[machines]]` entry of the config, or one added to the
//! running daemon. Each becomes the argv of a command whose stdin and stdout are that machine's
//! sidecar socket.

use crate::ipc::schema::MachineSpec;

/// What ssh runs on the machine unless the entry says otherwise.
pub const DEFAULT_REMOTE_COMMAND: &str = "thinkterm-sidecar bridge --start";

/// ssh's options for a link: never ask for a password (a prompt would hang the link), notice a
/// dead peer within 45 s, give up connecting after 10 s.
pub const SSH_OPTIONS: [&str; 9] = [
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=3",
    "-o",
    "ConnectTimeout=10",
];

/// Whether `spec` can join `others`: a name of letters, digits, `-`, `_` and `.` that no other
/// machine has, and exactly one way to reach it.
pub fn check(spec: &MachineSpec, others: &[MachineSpec]) -> Result<(), String> {
    let name = spec.name.as_str();
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(format!(
            "name {name:?}: use 1 to 64 letters, digits, '-', '_' or '.'"
        ));
    }
    if others.iter().any(|o| o.name == name) {
        return Err(format!("a machine named {name:?} is already listed"));
    }
    match (&spec.ssh, spec.command.is_empty()) {
        (Some(dest), true) if !dest.is_empty() && !dest.starts_with('-') => Ok(()),
        (Some(_), true) => Err(format!(
            "{name}: ssh destination {:?} is not valid",
            spec.ssh
        )),
        (None, false) => Ok(()),
        (Some(_), false) => Err(format!("{name}: give either `ssh` or `command`, not both")),
        (None, true) => Err(format!("{name}: give `ssh` (a destination) or `command`")),
    }
}

/// The command that reaches the machine's sidecar.
pub fn argv(spec: &MachineSpec) -> Vec<String> {
    if !spec.command.is_empty() {
        return spec.command.clone();
    }
    let mut out: Vec<String> = vec!["ssh".into()];
    out.extend(SSH_OPTIONS.iter().map(|s| s.to_string()));
    out.extend(spec.ssh_args.iter().cloned());
    out.push("--".into());
    out.push(spec.ssh.clone().unwrap_or_default());
    out.push(
        spec.remote_command
            .clone()
            .unwrap_or_else(|| DEFAULT_REMOTE_COMMAND.to_string()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh(name: &str, dest: &str) -> MachineSpec {
        MachineSpec {
            name: name.into(),
            ssh: Some(dest.into()),
            ssh_args: Vec::new(),
            remote_command: None,
            command: Vec::new(),
        }
    }

    #[test]
    fn names_are_checked_and_unique_and_one_way_in() {
        assert!(check(&ssh("devbox", "devbox"), &[]).is_ok());
        assert!(check(&ssh("dev box", "d"), &[]).is_err());
        assert!(check(&ssh("", "d"), &[]).is_err());
        assert!(
            check(&ssh("a", "-oProxyCommand=x"), &[]).is_err(),
            "an option is no host"
        );
        assert!(check(&ssh("a", "h"), &[ssh("a", "other")]).is_err());
        let mut both = ssh("a", "h");
        both.command = vec!["true".into()];
        assert!(check(&both, &[]).is_err());
        let mut none = ssh("a", "h");
        none.ssh = None;
        assert!(check(&none, &[]).is_err());
        none.command = vec!["kubectl".into(), "exec".into()];
        assert!(check(&none, &[]).is_ok());
    }

    #[test]
    fn the_ssh_command_never_prompts_and_ends_options_before_the_host() {
        let mut s = ssh("devbox", "dev.example");
        s.ssh_args = vec!["-p".into(), "2222".into()];
        let a = argv(&s);
        assert_eq!(a[0], "ssh");
        assert!(a.contains(&"BatchMode=yes".to_string()));
        let dd = a.iter().position(|x| x == "--").expect("--");
        assert_eq!(&a[dd - 2..dd], ["-p", "2222"]);
        assert_eq!(a[dd + 1], "dev.example");
        assert_eq!(a[dd + 2], DEFAULT_REMOTE_COMMAND);
        let mut c = ssh("k", "x");
        c.ssh = None;
        c.command = vec!["kubectl".into(), "exec".into(), "pod".into()];
        assert_eq!(argv(&c), c.command);
    }
}
