// The pause program of the local test node (main.go), built by scripts/testbin.
module opstask/testbin/pause

go 1.25.0
