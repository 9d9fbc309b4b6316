//! Numbers and booleans that may also be written as strings, so that `$NAME` works for
//! them too: `context_window: $CTX`. In the first, typed pass over the raw text a `$NAME`
//! placeholder stands for "some value, checked after expansion"; after expansion the
//! string is parsed as the field's type.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{self, Deserializer, Unexpected, Visitor};

use super::expand_env_reference;

/// Whether `value` is an unexpanded `$NAME` reference.
pub(super) fn is_placeholder(value: &str) -> bool {
    expand_env_reference(value).is_some()
}

/// A scalar field type and how to name it in errors.
pub(super) trait Scalar: FromStr + Default {
    /// What an error says was expected.
    const EXPECTING: &'static str;
}

macro_rules! scalar_type {
    ($($t:ty => $name:literal),*) => {$(
        impl $crate::config::lenient::Scalar for $t {
            const EXPECTING: &'static str = $name;
        }
    )*};
}
scalar_type!(bool => "a boolean", u32 => "u32", u64 => "u64", usize => "usize", f32 => "a number", f64 => "a number");
/// The config's unit enums use it too (`config::app`).
pub(super) use scalar_type;

/// `FromStr` for a unit enum from its config names, so it can be a [`Scalar`] (and `$NAME`).
macro_rules! from_names {
    ($($t:ty { $($name:literal => $variant:expr),* })*) => {$(
        impl ::std::str::FromStr for $t {
            type Err = ();
            fn from_str(text: &str) -> Result<Self, ()> {
                match text {
                    $($name => Ok($variant),)*
                    _ => Err(()),
                }
            }
        }
    )*};
}
pub(super) use from_names;

struct ScalarVisitor<T>(PhantomData<T>);

impl<T: Scalar> ScalarVisitor<T> {
    fn parse<E: de::Error>(text: &str, unexpected: Unexpected<'_>) -> Result<T, E> {
        text.parse()
            .map_err(|_| E::invalid_type(unexpected, &Self(PhantomData)))
    }
}

impl<T: Scalar> Visitor<'_> for ScalarVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Self::parse(&v.to_string(), Unexpected::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Self::parse(&v.to_string(), Unexpected::Unsigned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Self::parse(&v.to_string(), Unexpected::Signed(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Self::parse(&v.to_string(), Unexpected::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        if is_placeholder(v) {
            return Ok(T::default());
        }
        Self::parse(v.trim(), Unexpected::Str(v))
    }
}

/// Deserializes a scalar from its native form or a string.
pub(super) fn scalar<'de, D: Deserializer<'de>, T: Scalar>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(ScalarVisitor(PhantomData))
}

/// Like [`scalar`], for optional fields (`null` is `None`).
pub(super) fn optional<'de, D: Deserializer<'de>, T: Scalar>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    struct OptionVisitor<T>(PhantomData<T>);
    impl<'de, T: Scalar> Visitor<'de> for OptionVisitor<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(T::EXPECTING)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            scalar(d).map(Some)
        }
    }
    deserializer.deserialize_option(OptionVisitor(PhantomData))
}
