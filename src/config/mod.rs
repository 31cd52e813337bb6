//! agentprof.yaml and conf.d: where agentprof finds its settings and each check's instances.

mod agent;
mod checkconf;

pub use agent::{AgentConfig, HistogramConfig, LoadOptions};
pub use checkconf::{CheckConf, InstanceCommon, find_key_line, suggest};
