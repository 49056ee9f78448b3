// A small TPC-C-like NewOrder/Payment mix through `corral proxy` with the
// PostgreSQL JDBC driver's default settings (prepareThreshold=5; integer
// parameters travel in binary), for tests/drivers/drivers_test.cc (issue
// 27: the proxy learns warehouse and district references from JDBC).
// The database is loaded beforehand (schemas/tpcc.sql plus a tiny dataset)
// and its default_transaction_isolation is serializable, so every
// transaction (setAutoCommit(false), pgjdbc's own BEGIN) runs SERIALIZABLE.
// 40001/40P01 are retried; the retry count is reported.
//
//   java -cp /usr/share/java/postgresql.jar TpccClient.java \
//       HOST PORT USER DBNAME SSLMODE WAREHOUSES THREADS TXNS_PER_THREAD DISTRICTS
//
// Transactions pick a warehouse in 1..WAREHOUSES and a district in
// 1..DISTRICTS (of the 10 loaded: fewer makes hot districts).
//
// Prints `tpcc committed=N neworder=A payment=B retries=R` after checking
// the database against what committed (orders, new_order, history counts,
// district order counters, warehouse year-to-date); exit 1 on a mismatch.
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

public class TpccClient {
  static String url;
  static Properties props = new Properties();
  static int warehouses, districts;
  static final AtomicLong newOrders = new AtomicLong();
  static final AtomicLong payments = new AtomicLong();
  static final AtomicLong retries = new AtomicLong();
  static final AtomicLong paidCents = new AtomicLong();

  static void fail(String why) {
    System.err.println("tpcc: " + why);
    System.exit(1);
  }

  static boolean retryable(SQLException e) {
    return "40001".equals(e.getSQLState()) || "40P01".equals(e.getSQLState());
  }

  // Sets the parameters in order: Integer with setInt, BigDecimal with setBigDecimal.
  static PreparedStatement set(PreparedStatement ps, Object... v) throws SQLException {
    for (int i = 0; i < v.length; i++) {
      if (v[i] instanceof Integer) ps.setInt(i + 1, (Integer) v[i]);
      else ps.setBigDecimal(i + 1, (BigDecimal) v[i]);
    }
    return ps;
  }

  static ResultSet one(PreparedStatement ps) throws SQLException {
    ResultSet rs = ps.executeQuery();
    if (!rs.next()) fail("no row for " + ps);
    return rs;
  }

  // One terminal: its own connection and statements, reused (so pgjdbc
  // switches them to named server-side statements after five executions).
  static class Terminal implements Runnable {
    final int id, txns;
    final Random rnd;
    Connection c;
    PreparedStatement custWh, dGet, dNext, oIns, noIns, iGet, sGet, sUp, olIns;
    PreparedStatement wYtd, dYtd, cPay, hIns;

    Terminal(int id, int txns) {
      this.id = id;
      this.txns = txns;
      this.rnd = new Random(1000 + id);
    }

    public void run() {
      try {
        c = DriverManager.getConnection(url, props);
        c.setAutoCommit(false);
        // The spec's first NewOrder statement (TPC-C 2.4.2.2): customer and warehouse.
        custWh = c.prepareStatement("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse "
            + "WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?");
        dGet = c.prepareStatement("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?");
        dNext = c.prepareStatement("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?");
        oIns = c.prepareStatement("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, "
            + "o_all_local) VALUES (?, ?, ?, ?, now(), ?, 1)");
        noIns = c.prepareStatement("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)");
        iGet = c.prepareStatement("SELECT i_price FROM item WHERE i_id = ?");
        sGet = c.prepareStatement("SELECT s_quantity FROM stock WHERE s_i_id = ? AND s_w_id = ?");
        sUp = c.prepareStatement("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1 "
            + "WHERE s_i_id = ? AND s_w_id = ?");
        olIns = c.prepareStatement("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, "
            + "ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'dist')");
        wYtd = c.prepareStatement("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?");
        dYtd = c.prepareStatement("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?");
        cPay = c.prepareStatement("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
            + "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        hIns = c.prepareStatement("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, "
            + "h_amount, h_data) VALUES (?, ?, ?, ?, ?, now(), ?, 'pay')");
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW transaction_isolation")) {
          rs.next();
          if (!"serializable".equals(rs.getString(1))) fail("isolation is " + rs.getString(1));
        }
        c.commit();
        for (int i = 0; i < txns; i++) {
          final boolean isNewOrder = rnd.nextBoolean();
          final int w = 1 + rnd.nextInt(warehouses), d = 1 + rnd.nextInt(districts), cu = 1 + rnd.nextInt(30);
          final int[] items = new int[5];
          for (int k = 0; k < items.length; k++) items[k] = 1 + rnd.nextInt(100);
          final long cents = 100 + rnd.nextInt(500000);
          while (true) {
            try {
              if (isNewOrder) newOrder(w, d, cu, items); else payment(w, d, cu, cents);
              c.commit();
              if (isNewOrder) newOrders.incrementAndGet(); else {
                payments.incrementAndGet();
                paidCents.addAndGet(cents);
              }
              break;
            } catch (SQLException e) {
              c.rollback();
              if (!retryable(e)) throw e;
              retries.incrementAndGet();
            }
          }
        }
        c.close();
      } catch (SQLException e) {
        fail("terminal " + id + ": " + e.getSQLState() + " " + e.getMessage());
      }
    }

    void newOrder(int w, int d, int cu, int[] items) throws SQLException {
      olIns.clearBatch();  // what a failed attempt left
      one(set(custWh, w, d, cu)).close();
      int oid;
      try (ResultSet rs = one(set(dGet, w, d))) {
        oid = rs.getInt(2);
      }
      set(dNext, w, d).executeUpdate();
      set(oIns, oid, d, w, cu, items.length).executeUpdate();
      set(noIns, oid, d, w).executeUpdate();
      for (int n = 0; n < items.length; n++) {
        BigDecimal price;
        try (ResultSet rs = one(set(iGet, items[n]))) {
          price = rs.getBigDecimal(1);
        }
        int q;
        try (ResultSet rs = one(set(sGet, items[n], w))) {
          q = rs.getInt(1);
        }
        set(sUp, q > 10 ? q - 5 : q + 86, 5, items[n], w).executeUpdate();
        set(olIns, oid, d, w, n + 1, items[n], w, 5, price.multiply(BigDecimal.valueOf(5))).addBatch();
      }
      olIns.executeBatch();
    }

    void payment(int w, int d, int cu, long cents) throws SQLException {
      BigDecimal amount = BigDecimal.valueOf(cents, 2);
      set(wYtd, amount, w).executeUpdate();
      set(dYtd, amount, w, d).executeUpdate();
      set(cPay, amount, amount, w, d, cu).executeUpdate();
      set(hIns, cu, d, w, d, w, amount).executeUpdate();
    }
  }

  static long scalar(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  public static void main(String[] args) throws Exception {
    url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/" + args[3];
    props.setProperty("user", args[2]);
    props.setProperty("sslmode", args[4]);
    props.setProperty("connectTimeout", "10");
    warehouses = Integer.parseInt(args[5]);
    districts = Integer.parseInt(args[8]);
    int threads = Integer.parseInt(args[6]), txns = Integer.parseInt(args[7]);
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) ts.add(new Thread(new Terminal(i, txns)));
    for (Thread t : ts) t.start();
    for (Thread t : ts) t.join();
    long no = newOrders.get(), pay = payments.get();
    try (Connection c = DriverManager.getConnection(url, props)) {
      long orders = scalar(c, "SELECT count(*) FROM orders");
      long newOrderRows = scalar(c, "SELECT count(*) FROM new_order");
      long counters = scalar(c, "SELECT sum(d_next_o_id - 3001) FROM district");
      long lines = scalar(c, "SELECT count(*) FROM order_line");
      long history = scalar(c, "SELECT count(*) FROM history");
      long ytdCents = scalar(c, "SELECT (sum(w_ytd) * 100)::bigint - " + 30000000L * warehouses + " FROM warehouse");
      if (orders != no || newOrderRows != no || counters != no || lines != 5 * no) {
        fail("neworder " + no + " but orders=" + orders + " new_order=" + newOrderRows + " counters=" + counters
            + " order_lines=" + lines);
      }
      if (history != pay || ytdCents != paidCents.get()) {
        fail("payment " + pay + " but history=" + history + " ytd_cents=" + ytdCents + " paid=" + paidCents.get());
      }
    }
    System.out.println("tpcc committed=" + (no + pay) + " neworder=" + no + " payment=" + pay + " retries="
        + retries.get());
  }
}
