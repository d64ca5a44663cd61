//! The machinery behind the config's key table: [`settings!`] turns one list of keys (doc,
//! type, default and, for numbers, the accepted range) into a struct, its `Default`, its list of
//! known keys and its setter; [`Setting`] is what each value type (and each table) provides.

use std::fmt;
use std::ops::RangeInclusive;
use std::path::PathBuf;

/// A value as it arrives: from the TOML file, or as the text of an environment variable.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A TOML value.
    Toml(&'a toml::Value),
    /// An environment variable's text.
    Env(&'a str),
}

impl fmt::Display for Input<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Toml(v) => write!(f, "{v}"),
            Input::Env(s) => write!(f, "{s:?}"),
        }
    }
}

/// Why a value was not taken (the key keeps its previous value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// No such key.
    #[error("unknown key")]
    Unknown,
    /// The value has the wrong type or form.
    #[error("{0}")]
    Invalid(String),
    /// A number outside the key's range.
    #[error("{value} is out of range ({}..={})", range.start(), range.end())]
    OutOfRange {
        /// The number given.
        value: i128,
        /// What the key accepts.
        range: RangeInclusive<u64>,
    },
}

/// One known key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// Its dotted name (`display.progress`).
    pub name: String,
    /// What it accepts, for a number.
    pub range: Option<RangeInclusive<u64>>,
}

/// A value type a key can hold, or a table of keys. Whole numbers are not one: every number
/// key names its range in [`settings!`], which reads it with [`number`].
pub trait Setting {
    /// Appends the keys at `name`: `name` itself for a plain value, `name.sub` for a table's.
    fn keys(name: &str, out: &mut Vec<Key>);
    /// Sets the value at `path`: empty for a plain value, the dotted key inside a table.
    fn set(&mut self, path: &str, input: Input<'_>) -> Result<(), SetError>;
}

/// `name.sub`, or `sub` at the top.
pub fn join(name: &str, sub: &str) -> String {
    if name.is_empty() {
        sub.to_string()
    } else {
        format!("{name}.{sub}")
    }
}

fn leaf(path: &str) -> Result<(), SetError> {
    if path.is_empty() {
        Ok(())
    } else {
        Err(SetError::Unknown)
    }
}

impl Setting for bool {
    fn keys(name: &str, out: &mut Vec<Key>) {
        out.push(Key {
            name: name.to_string(),
            range: None,
        });
    }

    fn set(&mut self, path: &str, input: Input<'_>) -> Result<(), SetError> {
        leaf(path)?;
        *self = match input {
            Input::Toml(toml::Value::Boolean(b)) => *b,
            Input::Env("true" | "1" | "yes" | "on") => true,
            Input::Env("false" | "0" | "no" | "off") => false,
            _ => {
                return Err(SetError::Invalid(format!(
                    "expected true or false, found {input}"
                )))
            }
        };
        Ok(())
    }
}

fn text(input: Input<'_>) -> Result<String, SetError> {
    match input {
        Input::Toml(toml::Value::String(s)) => Ok(s.clone()),
        Input::Env(s) => Ok(s.to_string()),
        Input::Toml(_) => Err(SetError::Invalid(format!(
            "expected a string, found {input}"
        ))),
    }
}

impl Setting for String {
    fn keys(name: &str, out: &mut Vec<Key>) {
        bool::keys(name, out);
    }

    fn set(&mut self, path: &str, input: Input<'_>) -> Result<(), SetError> {
        leaf(path)?;
        *self = text(input)?;
        Ok(())
    }
}

/// A file: an empty string means none.
impl Setting for Option<PathBuf> {
    fn keys(name: &str, out: &mut Vec<Key>) {
        bool::keys(name, out);
    }

    fn set(&mut self, path: &str, input: Input<'_>) -> Result<(), SetError> {
        leaf(path)?;
        let t = text(input)?;
        *self = (!t.is_empty()).then(|| PathBuf::from(t));
        Ok(())
    }
}

/// Reads a whole number and checks it against `range`.
pub fn number(input: Input<'_>, range: RangeInclusive<u64>) -> Result<u64, SetError> {
    let n: i128 = match input {
        Input::Toml(toml::Value::Integer(i)) => i128::from(*i),
        Input::Env(s) => s
            .trim()
            .parse()
            .map_err(|_| SetError::Invalid(format!("expected a whole number, found {input}")))?,
        Input::Toml(_) => {
            return Err(SetError::Invalid(format!(
                "expected a whole number, found {input}"
            )))
        }
    };
    match u64::try_from(n) {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(SetError::OutOfRange { value: n, range }),
    }
}

/// [`settings!`]'s part for listing a field's keys: a number with its range, else the type's.
macro_rules! field_keys {
    ($out:ident, $name:expr, $ty:ty, $range:expr) => {
        $out.push($crate::config::setting::Key {
            name: $name,
            range: Some($range),
        })
    };
    ($out:ident, $name:expr, $ty:ty) => {
        <$ty as $crate::config::setting::Setting>::keys(&$name, $out)
    };
}

/// [`settings!`]'s part for setting a field: a number read against its range, else the type's.
macro_rules! field_set {
    ($place:expr, $path:ident, $input:ident, $range:expr) => {
        if $path.is_empty() {
            $crate::config::setting::number($input, $range).map(|n| $place = n)
        } else {
            Err($crate::config::setting::SetError::Unknown)
        }
    };
    ($place:expr, $path:ident, $input:ident) => {
        $crate::config::setting::Setting::set(&mut $place, $path, $input)
    };
}

/// Declares a settings struct from one list of keys, each written once:
///
/// ```text
/// /// Doc of the key.
/// name: Type = default;
/// /// A number names what it accepts.
/// name: u64 = default, range min..=max;
/// ```
///
/// It yields the struct (with each field's doc, plus the range), `Default` from the defaults, and
/// [`Setting`], whose `keys` list every key (dotted inside tables) and whose `set` takes a value
/// for one of them, checking numbers against their range.
macro_rules! settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident: $ty:ty = $default:expr $(, range $range:expr)?;
            )+
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[$fmeta])*
                $(
                    #[doc = ""]
                    #[doc = concat!("Accepted: `", stringify!($range), "`.")]
                )?
                pub $field: $ty,
            )+
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)+
                }
            }
        }

        impl $crate::config::setting::Setting for $name {
            fn keys(name: &str, out: &mut Vec<$crate::config::setting::Key>) {
                $(
                    let key = $crate::config::setting::join(name, stringify!($field));
                    $crate::config::setting::field_keys!(out, key, $ty $(, $range)?);
                )+
            }

            fn set(
                &mut self,
                path: &str,
                input: $crate::config::setting::Input<'_>,
            ) -> Result<(), $crate::config::setting::SetError> {
                let (head, rest) = path.split_once('.').unwrap_or((path, ""));
                match head {
                    $(
                        stringify!($field) => {
                            $crate::config::setting::field_set!(
                                self.$field, rest, input $(, $range)?
                            )
                        }
                    )+
                    _ => Err($crate::config::setting::SetError::Unknown),
                }
            }
        }
    };
}

pub(crate) use {field_keys, field_set, settings};
