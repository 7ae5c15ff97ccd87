//! The methods a client may call, as one enum ([`Method`]: an unknown
//! method is a variant too), and what each is: which revision has it, what
//! entry it names, whether it may ask the client, whether a closing session
//! still serves it. Each is an exhaustive `match`, so a new method is a
//! decision the compiler asks for in every one.

/// Declares [`Method`]: one line per method, its variant and its wire name.
macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A request method. A new method is a new line here; every `match`
        /// on `Method` (what it names, which revision has it, whether it may
        /// ask the client) and on [`super::requests::Request`] then asks for it.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Method {
            $($(#[$doc])* $variant,)*
            /// A method this server does not serve, as the client named it.
            Unknown(String),
        }

        impl Method {
            /// The method a client names `name`.
            pub fn from_name(name: &str) -> Method {
                match name {
                    $($name => Method::$variant,)*
                    other => Method::Unknown(other.to_owned()),
                }
            }

            /// The method's name, as a client sends it.
            pub fn name(&self) -> &str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Unknown(name) => name,
                }
            }

            /// The name, or `other` for an unknown method: a label for
            /// metrics and traces that a client cannot add names to.
            pub fn label(&self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Unknown(_) => "other",
                }
            }

            /// Every method this server serves.
            #[cfg(test)]
            pub(crate) const SERVED: &[Method] = &[$(Method::$variant,)*];
        }
    };
}

methods! {
    /// Opens a 2025-11-25 session.
    Initialize = "initialize",
    /// 2026-07-28: versions, capabilities, identity.
    Discover = "server/discover",
    /// 2026-07-28: a stream of the notifications asked for.
    Listen = "subscriptions/listen",
    /// Checks that the server answers.
    Ping = "ping",
    /// Sets the least severity of the log messages the session is sent.
    SetLogLevel = "logging/setLevel",
    /// Asks to be told when a resource is updated.
    Subscribe = "resources/subscribe",
    /// Asks no longer to be told when a resource is updated.
    Unsubscribe = "resources/unsubscribe",
    /// The tools served, paginated.
    ListTools = "tools/list",
    /// The prompts served, paginated.
    ListPrompts = "prompts/list",
    /// The resources served, paginated.
    ListResources = "resources/list",
    /// The resource templates served, paginated.
    ListTemplates = "resources/templates/list",
    /// The session's tasks, paginated.
    ListTasks = "tasks/list",
    /// Calls a tool.
    CallTool = "tools/call",
    /// Reads a resource.
    ReadResource = "resources/read",
    /// A prompt, filled in with its arguments.
    GetPrompt = "prompts/get",
    /// Values for an argument of a prompt or a resource template.
    Complete = "completion/complete",
    /// A task's status.
    GetTask = "tasks/get",
    /// A task's result, once it has one.
    TaskResult = "tasks/result",
    /// Cancels a task.
    CancelTask = "tasks/cancel",
    /// The 2026-07-28 tasks extension: answers to a task's `inputRequests`.
    UpdateTask = "tasks/update",
    /// The skills extension: the skills served, paginated.
    ListSkills = "skills/list",
    /// The skills extension: one skill's entry, by the URI of its `SKILL.md`.
    GetSkill = "skills/get",
    /// The skills extension: the direct children of a directory resource.
    ReadDirectory = "resources/directory/read",
}

/// What kind of entry a request names in its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A tool, by `name`.
    Tool,
    /// A prompt, by `name`.
    Prompt,
    /// A resource, by `uri`.
    Resource,
    /// A task, by `taskId`.
    Task,
}

impl Target {
    /// The key in params that names it.
    pub fn key(self) -> &'static str {
        match self {
            Target::Tool | Target::Prompt => "name",
            Target::Resource => "uri",
            Target::Task => "taskId",
        }
    }
}

impl Method {
    /// Whether only the 2026-07-28 revision has this method (so that a
    /// request of it is of that revision whatever its `_meta` says).
    pub fn is_modern_only(&self) -> bool {
        matches!(self, Method::Discover | Method::Listen)
    }

    /// Whether a 2026-07-28 request may call this method. (`initialize`,
    /// `ping`, `logging/setLevel`, resource subscriptions, `tasks/result`
    /// and `tasks/list` belong to sessions opened by `initialize`.)
    pub fn is_in_modern(&self) -> bool {
        match self {
            Method::Discover
            | Method::Listen
            | Method::ListTools
            | Method::CallTool
            | Method::ListResources
            | Method::ListTemplates
            | Method::ReadResource
            | Method::ListPrompts
            | Method::GetPrompt
            | Method::Complete
            | Method::GetTask
            | Method::UpdateTask
            | Method::CancelTask
            | Method::ListSkills
            | Method::GetSkill
            | Method::ReadDirectory => true,
            Method::Initialize
            | Method::Ping
            | Method::SetLogLevel
            | Method::Subscribe
            | Method::Unsubscribe
            | Method::ListTasks
            | Method::TaskResult
            | Method::Unknown(_) => false,
        }
    }

    /// Whether a session that is closing still serves this method: what
    /// helps its client collect the work already running.
    pub fn is_served_while_closing(&self) -> bool {
        match self {
            Method::Ping
            | Method::ListTasks
            | Method::GetTask
            | Method::TaskResult
            | Method::CancelTask
            | Method::UpdateTask => true,
            Method::Initialize
            | Method::Discover
            | Method::Listen
            | Method::SetLogLevel
            | Method::Subscribe
            | Method::Unsubscribe
            | Method::ListTools
            | Method::ListPrompts
            | Method::ListResources
            | Method::ListTemplates
            | Method::CallTool
            | Method::ReadResource
            | Method::GetPrompt
            | Method::Complete
            | Method::ListSkills
            | Method::GetSkill
            | Method::ReadDirectory
            | Method::Unknown(_) => false,
        }
    }

    /// Whether the plugin call serving a 2026-07-28 request of this method
    /// may ask the client something (a multi round-trip request).
    pub fn may_ask_client(&self) -> bool {
        matches!(self, Method::CallTool | Method::GetPrompt | Method::ReadResource)
    }

    /// The kind of entry a request of this method names, if it names one.
    pub fn target(&self) -> Option<Target> {
        match self {
            Method::CallTool => Some(Target::Tool),
            Method::GetPrompt => Some(Target::Prompt),
            Method::ReadResource | Method::Subscribe | Method::Unsubscribe => Some(Target::Resource),
            Method::GetTask | Method::TaskResult | Method::CancelTask | Method::UpdateTask => Some(Target::Task),
            Method::Initialize
            | Method::Discover
            | Method::Listen
            | Method::Ping
            | Method::SetLogLevel
            | Method::ListTools
            | Method::ListPrompts
            | Method::ListResources
            | Method::ListTemplates
            | Method::ListTasks
            // The skills extension's methods name a URI the revision's
            // headers do not carry.
            | Method::ListSkills
            | Method::GetSkill
            | Method::ReadDirectory
            | Method::Complete
            | Method::Unknown(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_method_reads_back_by_its_name() {
        for method in Method::SERVED {
            assert_eq!(&Method::from_name(method.name()), method);
            assert_eq!(method.label(), method.name());
        }
        let unknown = Method::from_name("made/up");
        assert_eq!(unknown, Method::Unknown("made/up".into()));
        assert_eq!((unknown.name(), unknown.label()), ("made/up", "other"));
    }
}
