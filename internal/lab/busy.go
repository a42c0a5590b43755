package lab

import (
	"fmt"
	"os/exec"
	"syscall"
)

// StartBusyLoops starts n busy loops, each a shell spinning on the CPU, beside a
// load: issue 35's condition "under load" is two on a 2-core machine, where the
// kernel shares the CPU between them and the routers. They die with this process if
// it dies first (Pdeathsig); stop kills them, and may be called more than once.
func StartBusyLoops(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("lab: start a busy loop: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
