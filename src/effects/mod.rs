//! What the person sees and hears outside the status line: desktop notifications (S6.6–S6.8),
//! the two sounds (S6.1–S6.5) and bringing a pane to the front (S5.9, S6.7).
//!
//! Pure decisions live in their own modules and take the clock as an argument:
//! - [`throttle`]: at most one notification per window per 30 s, the latest one kept;
//! - [`background`]: whether a window counts as "in the background";
//! - [`notification`]: the text and hints of one notification;
//! - [`focus`]: the tmux commands that bring a pane to the front;
//! - [`terminal`]: the escape sequence of a terminal notification, and which one a terminal gets.
//!
//! The parts that talk to the outside world:
//! - [`desktop`]: `org.freedesktop.Notifications` over zbus, clicks coming back;
//! - [`sound`]: `paplay` / `pw-play` with the bundled chimes.

pub mod background;
pub mod desktop;
pub mod focus;
pub mod notification;
pub mod program_notes;
pub mod sound;
pub mod terminal;
pub mod throttle;

/// What the effects may do, after the environment rule is applied over the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enabled {
    /// Sounds may play.
    pub sound: bool,
    /// Desktop notifications may be sent.
    pub notifications: bool,
}

impl Enabled {
    /// Applies S6.4: `env_disabled` (the variable is set) wins over both config switches.
    pub fn resolve(env_disabled: bool, config_sound: bool, config_notifications: bool) -> Self {
        Enabled {
            sound: config_sound && !env_disabled,
            notifications: config_notifications && !env_disabled,
        }
    }

    /// [`Enabled::resolve`] with the rule read from this process's environment.
    pub fn from_env(config_sound: bool, config_notifications: bool) -> Self {
        Self::resolve(disabled_by_env(), config_sound, config_notifications)
    }
}

/// Whether `THINKTERM_DISABLE_SOUND` is set in this process's environment (any value, even
/// empty): [`crate::config::sound_disabled_by_env`], where the rule lives.
pub fn disabled_by_env() -> bool {
    crate::config::sound_disabled_by_env()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_rule_wins_over_the_config() {
        let on = Enabled::resolve(false, true, true);
        assert!(on.sound && on.notifications);
        let env = Enabled::resolve(true, true, true);
        assert!(!env.sound && !env.notifications);
        let cfg = Enabled::resolve(false, false, true);
        assert!(!cfg.sound && cfg.notifications);
    }
}
