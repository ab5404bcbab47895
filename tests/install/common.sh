# What the install tests' scripts share (sourced).

# A TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_endpoint HOME PID: waits up to 10 s for the endured PID to write HOME/endpoint;
# fails (printing LOG, the third argument, when given) if it exits or never does.
wait_for_endpoint() {
  local home=$1 pid=$2 log=${3:-/dev/null}
  for _ in $(seq 100); do
    [ -s "$home/endpoint" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "endured did not start on $home" >&2
  cat "$log" >&2
  return 1
}
