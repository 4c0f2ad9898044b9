//! Chainable `with_*` setters for the public configuration structs, which
//! are `#[non_exhaustive]` so that a new field is not a breaking change:
//! users start from a constructor and set what they need in one expression.

/// `setters!(Type { /// doc
///     with_name(field: T) })` writes `pub fn with_name(self, value: impl
/// Into<T>) -> Self` for each field.
macro_rules! setters {
    ($ty:ty { $( $(#[$doc:meta])* $setter:ident($field:ident: $t:ty) ),* $(,)? }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $setter(mut self, value: impl Into<$t>) -> Self {
                    self.$field = value.into();
                    self
                }
            )*
        }
    };
}

pub(crate) use setters;
