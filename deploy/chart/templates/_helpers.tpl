{{/* The image of both the operator and the agent: one binary, `nuo`, serves both. */}}
{{- define "nuo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The agent set-ups of deploy/ (base and deploy/variants/*): each variant's args, the host paths it mounts
and whether it needs the host's PID namespace and a privileged container (nsenter, for the command
variant). docs/agent.md says why each needs what it mounts.
*/}}
{{- define "nuo.agentVariants" -}}
sentinel:
  args: [agent, --detector=sentinel-file, --rebooter=logind]
  mounts: [os-release, host-run, system-bus]
flatcar:
  args: [agent, --detector=update-engine, --rebooter=logind]
  mounts: [os-release, system-bus]
cos:
  args: [agent, --detector=cos-update-engine, --rebooter=logind]
  mounts: [os-release, system-bus]
command:
  args: [agent, --detector=command, {{ printf "--check-command=%s" .Values.agent.checkCommand | quote }}, --rebooter=command]
  mounts: [os-release, host-run]
  hostPID: true
{{- end }}

{{/* Every host path an agent variant may mount: the volume and where it appears in the container. */}}
{{- define "nuo.agentMounts" -}}
os-release:
  mount: { mountPath: /host/etc/os-release, readOnly: true }
  hostPath: { path: /etc/os-release, type: File }
host-run:
  mount: { mountPath: /host/var/run, readOnly: true }
  hostPath: { path: /var/run, type: Directory }
system-bus:
  mount: { mountPath: /run/dbus/system_bus_socket }
  hostPath: { path: /run/dbus/system_bus_socket, type: Socket }
{{- end }}

{{/* A CEL list's items: the usernames of ServiceAccounts given as namespace/name. */}}
{{- define "nuo.serviceAccountUsers" -}}
{{- range $i, $sa := . }}{{ if $i }}, {{ end }}'system:serviceaccount:{{ $sa | replace "/" ":" }}'{{ end }}
{{- end }}
