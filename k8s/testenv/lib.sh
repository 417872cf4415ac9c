# Shared by start.sh and cluster.sh (sourced, not run). The caller
# defines die().

# A port nobody listens on, outside the ephemeral range (so an outgoing
# connection cannot take it meanwhile) and not one picked already. Another
# process may still bind it first: the caller's retry handles that.
# Sets $port_ (no subshell, so $picked remembers).
picked=" "
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    [[ $picked == *" $p "* ]] && continue
    if [[ -z "$(ss -Htln "sport = :$p")" ]]; then
      picked+="$p "
      port_=$p
      return 0
    fi
  done
  die "no free TCP port found in 20000-31999"
}
