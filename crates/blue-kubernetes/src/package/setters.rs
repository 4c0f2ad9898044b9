//! Chainable `with_*` setters for the public configuration structs, which
//! are `#[non_exhaustive]` so that a new field is not a breaking change:
//! users start from a constructor and set what they need in one expression.
//!
//! A setter takes one concrete type, never `impl Into<T>`: an integer
//! literal then needs no suffix (`.with_workers(4)`), and a conversion is
//! the caller's visible `.into()`.

/// `setters!(Type { /// doc
///     with_name(field: T) })` writes `pub fn with_name(self, value: T) ->
/// Self` for each field; for an `Option<T>` field, write the `T`: the
/// setter takes a `T` and stores `Some`.
macro_rules! setters {
    ($ty:ty { $( $(#[$doc:meta])* $setter:ident($field:ident: $t:ty) ),* $(,)? }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                // `From` is the identity for a plain field, `Some` for an
                // optional one.
                #[allow(clippy::useless_conversion)]
                pub fn $setter(mut self, value: $t) -> Self {
                    self.$field = From::from(value);
                    self
                }
            )*
        }
    };
}

pub(crate) use setters;
