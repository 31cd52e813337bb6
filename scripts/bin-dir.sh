# Sourced by the shell scripts: `bin_dir release` prints where cargo puts agentprof's release
# binaries, target/<host tuple>/release (.cargo/config.toml names the host's target).
bin_dir() {
  echo "target/$(rustc -vV | sed -n 's/^host: //p')/$1"
}
