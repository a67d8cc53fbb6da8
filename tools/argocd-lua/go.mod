// The Lua harness of tests/unit/packaging/test_argocd.py: gopher-lua and gopher-json at the versions Argo CD's
// go.mod pins (argoproj/argo-cd v3), built by tools/argocd-lua/build.sh.
module sundial.dev/tools/argocd-lua

go 1.24

require (
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20190114024228-97fed8db8427
)
