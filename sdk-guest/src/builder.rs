//! The builder methods that [`Tool`](crate::Tool), [`Resource`](crate::Resource),
//! [`ResourceTemplate`](crate::ResourceTemplate) and [`Prompt`](crate::Prompt)
//! share: each sets one field of the listed definition (`self.def`) or adds
//! a completer.

/// Defines builder methods inside an `impl` block, one per entry, each with
/// the doc comment written before it:
///
/// - `text field;` — `fn field(self, field: impl Into<String>)`, sets `Some(field.into())`.
/// - `value field: Type;` — `fn field(self, field: Type)`, sets `Some(field)`.
/// - `icon;` — `fn icon(self, icon: Icon)`, adds to `icons`.
/// - `meta;` — `fn meta(self, meta: Value)`, sets `_meta` to the serialized object.
/// - `complete param;` — `fn complete(self, param, handler)`, adds a completer.
macro_rules! setters {
    ($($(#[$doc:meta])* $kind:ident $($field:ident $(: $ty:ty)?)?;)*) => {
        $($crate::builder::setters!(@one [$(#[$doc])*] $kind $($field $(: $ty)?)?);)*
    };
    (@one [$($doc:tt)*] text $field:ident) => {
        $($doc)*
        pub fn $field(mut self, $field: impl Into<String>) -> Self {
            self.def.$field = Some($field.into());
            self
        }
    };
    (@one [$($doc:tt)*] value $field:ident: $ty:ty) => {
        $($doc)*
        pub fn $field(mut self, $field: $ty) -> Self {
            self.def.$field = Some($field);
            self
        }
    };
    (@one [$($doc:tt)*] icon) => {
        $($doc)*
        pub fn icon(mut self, icon: $crate::Icon) -> Self {
            self.def.icons.push(icon);
            self
        }
    };
    (@one [$($doc:tt)*] meta) => {
        $($doc)*
        pub fn meta(mut self, meta: serde_json::Value) -> Self {
            self.def.meta = Some(meta.to_string());
            self
        }
    };
    (@one [$($doc:tt)*] complete $param:ident) => {
        $($doc)*
        pub fn complete(
            mut self,
            $param: impl Into<String>,
            handler: impl Fn(&str, &$crate::Arguments) -> Vec<String> + 'static,
        ) -> Self {
            self.completers.add($param.into(), Box::new(handler));
            self
        }
    };
}

pub(crate) use setters;
