module sundial.local/controlplane/pause

go 1.26
