/**
 * The Chronofence dashboard: a single-page app served by the API role at
 * /ui (docs/dashboard.md). Sign-in takes a tenant's API key; every page then
 * reads the authenticated, tenant-scoped API with it, polling while open.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { onKeyRefused, session } from "./api.js";
import { ClusterPage } from "./pages/cluster.js";
import { DeadLettersPage } from "./pages/dead-letters.js";
import { OverviewPage } from "./pages/overview.js";
import { SchedulePage, SchedulesPage } from "./pages/schedules.js";
import { SignIn } from "./pages/sign-in.js";
import { TaskPage } from "./pages/task.js";
import { TasksPage } from "./pages/tasks.js";
import { WorkflowPage } from "./pages/workflow.js";
import { WorkflowsPage } from "./pages/workflows.js";
import { linkTo, match, navigate, useRoute } from "./router.js";
import "./styles.css";

const NAV: Array<[string, string]> = [
  ["/", "Overview"],
  ["/tasks", "Tasks"],
  ["/dead-letters", "Dead letters"],
  ["/schedules", "Schedules"],
  ["/workflows", "Workflows"],
  ["/cluster", "Cluster"],
];

function Page({ path }: { path: string }) {
  const task = match("/tasks/:id", path);
  if (task) return <TaskPage id={task.id!} />;
  const schedule = match("/schedules/:id", path);
  if (schedule) return <SchedulePage id={schedule.id!} />;
  const workflow = match("/workflows/:id", path);
  if (workflow) return <WorkflowPage id={workflow.id!} />;
  switch (path.replace(/\/$/, "") || "/") {
    case "/":
      return <OverviewPage />;
    case "/tasks":
      return <TasksPage />;
    case "/dead-letters":
      return <DeadLettersPage />;
    case "/schedules":
      return <SchedulesPage />;
    case "/workflows":
      return <WorkflowsPage />;
    case "/cluster":
      return <ClusterPage />;
    default:
      return <p>No such page.</p>;
  }
}

function App() {
  const { path } = useRoute();
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  const [refused, setRefused] = useState(false);
  useEffect(
    () =>
      onKeyRefused(() => {
        session.signOut();
        setRefused(true);
        setSignedIn(false);
      }),
    [],
  );
  if (!signedIn) {
    return (
      <SignIn
        refused={refused}
        onSignedIn={() => {
          setRefused(false);
          setSignedIn(true);
        }}
      />
    );
  }
  const section = `/${path.split("/")[1] ?? ""}`;
  return (
    <div class="shell">
      <header>
        <a class="brand" {...linkTo("/")}>
          Chronofence
        </a>
        <nav>
          {NAV.map(([to, label]) => (
            <a key={to} {...linkTo(to)} class={section === to ? "active" : ""}>
              {label}
            </a>
          ))}
        </nav>
        <button
          type="button"
          class="link"
          onClick={() => {
            session.signOut();
            setSignedIn(false);
            navigate("/");
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Page path={path} />
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
