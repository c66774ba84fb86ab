package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/appdb"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// openBridge prepares the app-database bridge when --app-db is set.
func (s *Server) openBridge(f *fsm.FSM, reg prometheus.Registerer) error {
	if s.cfg.AppDB == "" {
		return nil
	}
	b, err := appdb.New(appdb.Config{DSN: s.cfg.AppDB, FSM: f, Node: s.Node, Poll: s.cfg.AppDBPoll, Logger: s.log.With("job", "appdb")})
	if err != nil {
		return err
	}
	reg.MustRegister(b.Metrics())
	s.bridge = b
	return nil
}

// bridgeStatus is what the admin API shows of the bridge; nil without one.
func (s *Server) bridgeStatus() func() any {
	if s.bridge == nil {
		return nil
	}
	return func() any { return s.bridge.Status() }
}

// runBridge starts the bridge; it works only while this node leads.
func (s *Server) runBridge(ctx context.Context) {
	if s.bridge == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.bridge.Run(ctx)
	}()
}

// Bridge is the app-database bridge, nil without --app-db.
func (s *Server) Bridge() *appdb.Bridge { return s.bridge }

// stopExport switches the FSM's export off when this farm runs without an app
// database (it was started with one before), so the ledger stops growing.
func (s *Server) stopExport(ctx context.Context) {
	if s.bridge != nil || !s.Node.FSM.AppExport().On {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Node.Apply(actx, &fsm.SetAppExport{On: false}); err != nil {
		s.log.Warn("switch app export off", "err", err)
		return
	}
	s.log.Warn("started without --app-db: stopped exporting the ledger to the app database; movements until it is back are not exported")
}
