//! Names of things: fieldless enums that print as the snake_case words of the wire format and
//! of spec/, so a message, a trace and a JSON document use one spelling.

/// Declares a fieldless enum together with its snake_case name for each variant, the list of
/// every variant in declaration order, and a `Display` that prints the name. The serde
/// spelling (`rename_all = "snake_case"`) is the same word; a test holds them together.
macro_rules! named {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $name:literal, )*
        }
    ) => {
        $(#[$meta])*
        pub enum $ty {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: [$ty; [$($name),*].len()] = [$($ty::$variant),*];

            /// The snake_case name, as on the wire and in spec/.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $ty::$variant => $name, )*
                }
            }
        }

        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub(crate) use named;
